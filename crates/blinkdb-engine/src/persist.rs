//! The engine's side of the append-only file: writes become records in the
//! log (with SELECT when the database changes), large values are read back
//! from it, and a rewrite streams a compact snapshot into a new base.

use crate::aof::{Aof, BlobRef, Lsn, Result};
use bytes::Bytes;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

/// The log as the keyspace uses it.
pub struct Log {
    pub aof: Aof,
    /// (incr file, database) the last record was written for; a new file
    /// or another database needs a SELECT first.
    selected: Mutex<(u64, usize)>,
    /// `verify-blobs-on-read`, changed by CONFIG SET for the next read.
    verify_blobs: AtomicBool,
}

impl Log {
    /// `blob_threshold`: arguments this long are kept in the log, not in
    /// memory (the AOF's setting, `Aof::set_blob_threshold`).
    pub fn new(aof: Aof, verify_blobs: bool, blob_threshold: usize) -> Self {
        aof.set_blob_threshold(blob_threshold);
        Log {
            aof,
            selected: Mutex::new((u64::MAX, usize::MAX)),
            verify_blobs: AtomicBool::new(verify_blobs),
        }
    }

    pub fn set_verify_blobs(&self, verify: bool) {
        self.verify_blobs.store(verify, Ordering::Relaxed);
    }

    fn verify(&self) -> bool {
        self.verify_blobs.load(Ordering::Relaxed)
    }

    /// Appends one command for `db`. Returns its position and where its
    /// large arguments lie in the log.
    pub fn append(&self, db: usize, args: &[&[u8]]) -> Result<(Lsn, Vec<BlobRef>)> {
        self.aof.append(|w| {
            // The selected-db lock nests inside the AOF's append lock, so
            // records and their SELECTs cannot interleave across callers.
            let mut sel = self.selected.lock();
            if *sel != (w.file_seq(), db) {
                w.command(&[b"SELECT", db.to_string().as_bytes()]);
                *sel = (w.file_seq(), db);
            }
            w.command(args)
        })
    }

    pub fn read_blob(&self, r: &BlobRef) -> Result<Bytes> {
        self.aof.read_blob(r, self.verify())
    }

    /// A large value's open file, read (and checked, unless `verify-blobs-on-read
    /// no`) when the reply is sent.
    pub fn blob_source(&self, r: &BlobRef) -> Result<crate::aof::BlobSource> {
        self.aof.blob_source(r, self.verify())
    }
}
