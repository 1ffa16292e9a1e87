//! appendfsync always through `flush_inline`, the path connection threads take: threads
//! that sync on their own stack never sync at the same time, every acknowledged record is
//! on disk, a thread arriving during another's sync waits and is covered, and a full disk
//! fails the waiters with the MISCONF error, then recovers once space is back.

use std::sync::Arc;

use crate::common::{load_all, options, write_from_threads};
use blinkdb_engine::{Aof, AofError, FaultStorage, FsyncPolicy};

fn always(dir: &std::path::Path, storage: &FaultStorage) -> Arc<Aof> {
    let mut opts = options(dir);
    opts.fsync = FsyncPolicy::Always;
    let aof = Arc::new(Aof::open_with(opts, Arc::new(storage.clone())).unwrap());
    load_all(&aof);
    aof
}

/// Every command in the log, read back by a fresh `Aof` (the fsync policy plays no part in
/// loading).
fn reload(dir: &std::path::Path) -> Vec<Vec<Vec<u8>>> {
    load_all(&Aof::open(options(dir)).unwrap()).0
}

#[test]
fn threads_syncing_inline_cover_every_acknowledged_write() {
    let dir = tempfile::tempdir().unwrap();
    let storage = FaultStorage::new();
    let aof = always(dir.path(), &storage);
    let (threads, per_thread) = (8, 300);
    write_from_threads(&aof, threads, per_thread, |aof, lsn, rt| {
        rt.block_on(aof.flush_inline(lsn)).unwrap();
        assert!(aof.stats().synced_lsn >= lsn, "acknowledged before synced");
    });
    let acked = (threads * per_thread) as u64;
    assert!(storage.sync_count() <= acked, "at most one sync per write");
    drop(aof);
    assert_eq!(reload(dir.path()).len() as u64, acked);
}

#[test]
fn a_full_disk_fails_every_waiter_and_later_writes_land() {
    let dir = tempfile::tempdir().unwrap();
    let storage = FaultStorage::new();
    let aof = always(dir.path(), &storage);
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    storage.set_disk_full(Some(0));
    write_from_threads(&aof, 4, 1, |aof, lsn, rt| {
        match rt.block_on(aof.flush_inline(lsn)) {
            Err(AofError::WriteFailed { reason }) => {
                assert!(reason.contains("No space left"), "{reason}")
            }
            other => panic!("a write on a full disk was acknowledged: {other:?}"),
        }
    });
    storage.set_disk_full(None);
    let (lsn, _) = aof
        .append(|w| w.command(&[b"SET", b"after", b"v"]))
        .unwrap();
    rt.block_on(aof.flush_inline(lsn)).unwrap();
    drop(aof);
    let keys: Vec<_> = reload(dir.path()).iter().map(|c| c[1].clone()).collect();
    for k in ["t0:0", "t1:0", "t2:0", "t3:0", "after"] {
        assert!(keys.contains(&k.as_bytes().to_vec()), "{k} lost: {keys:?}");
    }
}
