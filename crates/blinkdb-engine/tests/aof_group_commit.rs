//! appendfsync always: many threads append + wait_synced; every acknowledged record is on
//! disk after each wait, and concurrent waiters share fdatasyncs (far fewer syncs than
//! acknowledged writes).

use std::sync::Arc;

use crate::common::{load_all, options, write_from_threads};
use blinkdb_engine::{Aof, FaultStorage, FsyncPolicy};

#[test]
fn concurrent_waiters_share_fdatasyncs() {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = options(dir.path());
    opts.fsync = FsyncPolicy::Always;
    let storage = FaultStorage::new();
    let aof = Arc::new(Aof::open_with(opts.clone(), Arc::new(storage.clone())).unwrap());
    load_all(&aof);
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let (threads, per_thread) = (16, 200);
    let syncs_before = storage.sync_count();
    write_from_threads(&aof, threads, per_thread, |aof, lsn, rt| {
        aof.commit(lsn).unwrap();
        rt.block_on(aof.wait_synced(lsn)).unwrap();
        assert!(aof.stats().synced_lsn >= lsn);
    });
    let acked = (threads * per_thread) as u64;
    let syncs = storage.sync_count() - syncs_before;
    let stats = aof.stats();
    println!(
        "acknowledged {acked} writes with {syncs} fdatasyncs, {} write() calls",
        stats.writes
    );
    assert!(syncs >= 1);
    assert!(
        syncs * 2 < acked,
        "group commit should share syncs: {syncs} for {acked}"
    );
    assert_eq!(stats.fsyncs, syncs);
    rt.block_on(async { assert!(aof.wait_synced(stats.written_lsn).await.is_ok()) });
    drop(aof);
    let aof = Aof::open(opts).unwrap();
    let (cmds, _) = load_all(&aof);
    assert_eq!(cmds.len() as u64, acked);
}
