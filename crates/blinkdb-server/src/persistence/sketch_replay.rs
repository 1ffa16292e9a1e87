//! The AOF replay's side of sketch files (engine `sketch_files.rs`): a file
//! holds its key's sketch exactly as of its checkpoint, so the
//! key's records up to there need not run.
//!
//! Rules, per key with a verified file checkpointed at `C`:
//! - a covered record (`props::FILE_COVERED`: it changes only its key's
//!   sketch from that sketch and its arguments; or a rewrite's `RESTORE key
//!   0 payload`) at or before `C` is held back, not run;
//! - any other record that names the key (as any argument, in any db), or
//!   that changes keys without naming them (FLUSHALL, FLUSHDB, SWAPDB), at or
//!   before `C`: the held-back records of the key run first, in order, then
//!   it. They touch that key alone, so running them late gives every
//!   record the state it had when it was logged;
//! - the first record after `C` that concerns the key, or the end of the
//!   log: the file's sketch replaces whatever the key holds (keeping its
//!   expiry) and the held-back records are dropped: their effect is in it.
//!
//! Held-back records cost memory until then (their arguments; a large one is
//! a reference into the log): at most the log's records of those keys.

use crate::persistence::Replayer;
use blinkdb_engine::sketch_file::Found;
use blinkdb_engine::{AofArg, BlobRef, Engine, FileId, LoadedCommand, Lsn};
use bytes::Bytes;
use std::collections::HashMap;

/// How a logged command concerns sketch files (the command table's props).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// `props::FILE_COVERED`.
    Covered,
    /// `props::RESTORES_PAYLOAD`: covered in the form `RESTORE key 0 payload`.
    Restore,
    /// A write without key arguments in `@keyspace` (FLUSHALL...).
    AllKeys,
    /// Anything else: any argument may name a key.
    Args,
}

struct Pending {
    found: Found,
    held: Vec<Held>,
}

/// A held-back record, kept small until it is run or dropped: its inline
/// arguments copied into one buffer, with where each ends (8 bytes per
/// argument). The loader's form (a `Bytes` in an enum per argument, 40
/// bytes each besides the bytes) took about four times a t-digest's
/// 500-value record, and holding a restart's thousands of them at once was
/// a fifth of its time in page faults and allocation; compacted, the
/// loader's memory is reused from batch to batch.
struct Held {
    data: Bytes,
    /// Each argument's end in `data` (a large argument's: where the one
    /// before it ended).
    ends: Vec<usize>,
    /// The large arguments (kept in the log), by position.
    blobs: Vec<(usize, BlobRef)>,
    file: FileId,
    offset: u64,
    lsn: Lsn,
}

impl Held {
    fn of(cmd: LoadedCommand) -> Held {
        let bytes: usize = cmd.args.iter().filter_map(inline).map(<[u8]>::len).sum();
        let mut data = Vec::with_capacity(bytes);
        let mut ends = Vec::with_capacity(cmd.args.len());
        let mut blobs = Vec::new();
        for (i, a) in cmd.args.iter().enumerate() {
            match a {
                AofArg::Inline(b) => data.extend_from_slice(b),
                AofArg::Blob(r) => blobs.push((i, *r)),
            }
            ends.push(data.len());
        }
        Held {
            data: Bytes::from(data),
            ends,
            blobs,
            file: cmd.file,
            offset: cmd.offset,
            lsn: cmd.lsn,
        }
    }

    fn command(self) -> LoadedCommand {
        let mut blobs = self.blobs.into_iter().peekable();
        let mut start = 0;
        let mut args = Vec::with_capacity(self.ends.len());
        for (i, end) in self.ends.into_iter().enumerate() {
            match blobs.next_if(|(at, _)| *at == i) {
                Some((_, r)) => args.push(AofArg::Blob(r)),
                None => args.push(AofArg::Inline(self.data.slice(start..end))),
            }
            start = end;
        }
        LoadedCommand {
            args,
            file: self.file,
            offset: self.offset,
            lsn: self.lsn,
        }
    }
}

fn commands(held: Vec<Held>) -> Vec<LoadedCommand> {
    held.into_iter().map(Held::command).collect()
}

/// What to run for one logged command.
pub struct Run {
    /// Held-back records to run first, each with the db it was logged in.
    pub first: Vec<(usize, Vec<LoadedCommand>)>,
    pub cmd: LoadedCommand,
}

#[derive(Default)]
pub struct SketchReplay {
    pending: HashMap<(usize, Vec<u8>), Pending>,
    /// Key name -> the dbs it has a pending file in.
    names: HashMap<Vec<u8>, Vec<usize>>,
    pub skipped: u64,
    pub flushed: u64,
    pub installed: u64,
}

fn inline(a: &AofArg) -> Option<&[u8]> {
    match a {
        AofArg::Inline(b) => Some(b),
        AofArg::Blob(_) => None,
    }
}

impl SketchReplay {
    pub fn new(found: Vec<Found>) -> SketchReplay {
        let mut r = SketchReplay::default();
        for f in found {
            r.names.entry(f.key.clone()).or_default().push(f.db);
            r.pending.insert(
                (f.db, f.key.clone()),
                Pending {
                    found: f,
                    held: Vec::new(),
                },
            );
        }
        r
    }

    pub fn is_empty(&self) -> bool {
        self.pending.is_empty()
    }

    fn take(&mut self, db: usize, key: &[u8]) -> Option<Pending> {
        let p = self.pending.remove(&(db, key.to_vec()))?;
        if let Some(dbs) = self.names.get_mut(key) {
            dbs.retain(|d| *d != db);
            if dbs.is_empty() {
                self.names.remove(key);
            }
        }
        Some(p)
    }

    fn install(&mut self, engine: &Engine, p: Pending) {
        self.installed += 1;
        engine.sketch_files.install(engine, p.found);
    }

    /// `(db, key)` is concerned by a record at `lsn` that is not held back:
    /// returns the held-back records to run first (or installs the file if
    /// `lsn` is past its checkpoint).
    fn concern(
        &mut self,
        engine: &Engine,
        db: usize,
        key: &[u8],
        lsn: u64,
        first: &mut Vec<(usize, Vec<LoadedCommand>)>,
    ) {
        let Some(p) = self.pending.get_mut(&(db, key.to_vec())) else {
            return;
        };
        if lsn > p.found.checkpoint {
            let p = self.take(db, key).expect("present");
            self.install(engine, p);
        } else if !p.held.is_empty() {
            self.flushed += p.held.len() as u64;
            first.push((db, commands(std::mem::take(&mut p.held))));
        }
    }

    /// Decides for one logged command run in `db`: None when it is held back.
    pub fn before(
        &mut self,
        engine: &Engine,
        db: usize,
        scope: Scope,
        cmd: LoadedCommand,
    ) -> Option<Run> {
        let mut first = Vec::new();
        if self.pending.is_empty() {
            return Some(Run { first, cmd });
        }
        let lsn = cmd.lsn.0;
        let covered = match scope {
            Scope::Covered => true,
            Scope::Restore => {
                cmd.args.len() == 4 && cmd.args.get(2).and_then(inline) == Some(&b"0"[..])
            }
            _ => false,
        };
        if covered {
            if let Some(key) = cmd.args.get(1).and_then(inline) {
                let key = key.to_vec();
                if let Some(p) = self.pending.get_mut(&(db, key.clone())) {
                    if lsn <= p.found.checkpoint {
                        self.skipped += 1;
                        p.held.push(Held::of(cmd));
                        return None;
                    }
                    let p = self.take(db, &key).expect("present");
                    self.install(engine, p);
                }
                return Some(Run { first, cmd });
            }
        }
        let concerned: Vec<(usize, Vec<u8>)> = if scope == Scope::AllKeys {
            self.pending.keys().cloned().collect()
        } else {
            let mut v = Vec::new();
            for a in cmd.args.iter().skip(1).filter_map(inline) {
                if let Some(dbs) = self.names.get(a) {
                    v.extend(dbs.iter().map(|d| (*d, a.to_vec())));
                }
            }
            v
        };
        for (d, k) in concerned {
            self.concern(engine, d, &k, lsn, &mut first);
        }
        Some(Run { first, cmd })
    }

    /// At the end of the log: a file whose checkpoint is past the log's end
    /// holds writes the log does not (another log's file) and is dropped,
    /// its held-back records returned to run; the others are installed.
    pub fn finish(&mut self, engine: &Engine, end: u64) -> Vec<(usize, Vec<LoadedCommand>)> {
        let mut first = Vec::new();
        let keys: Vec<(usize, Vec<u8>)> = self.pending.keys().cloned().collect();
        for (db, key) in keys {
            let p = self.take(db, &key).expect("present");
            if p.found.checkpoint > end {
                first.push((db, commands(p.held)));
                engine
                    .sketch_files
                    .discard(p.found, "checkpointed past the end of the AOF");
            } else {
                self.install(engine, p);
            }
        }
        first
    }
}

/// Runs held-back records in their db, then selects `back` again.
pub fn run_held<R: Replayer>(
    client: &mut R,
    held: Vec<(usize, Vec<LoadedCommand>)>,
    mut each: impl FnMut(&mut R, LoadedCommand) -> Result<(), String>,
) -> Result<(), String> {
    if held.is_empty() {
        return Ok(());
    }
    let back = client.db();
    for (db, cmds) in held {
        select(client, db)?;
        for c in cmds {
            each(client, c)?;
        }
    }
    select(client, back)
}

fn select<R: Replayer>(client: &mut R, db: usize) -> Result<(), String> {
    if client.db() == db {
        return Ok(());
    }
    let n = db.to_string();
    let args: crate::protocol::Args = [&b"SELECT"[..], n.as_bytes()].into_iter().collect();
    client.run(&args)
}
