//! CONFIG SET appendfsync while the log runs: a change syncs once, so a waiter of `always`
//! is answered when the policy becomes `no`; leaving `no` syncs the incr files rotated out
//! meanwhile; `everysec` syncs by itself again after a period of `no`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::common::{load_all, options};
use blinkdb_engine::{Aof, FaultStorage, FsyncPolicy};

fn open(dir: &std::path::Path, policy: FsyncPolicy, storage: &FaultStorage) -> Arc<Aof> {
    let mut opts = options(dir);
    opts.fsync = policy;
    opts.segment_size = 4096;
    let aof = Arc::new(Aof::open_with(opts, Arc::new(storage.clone())).unwrap());
    load_all(&aof);
    aof
}

fn set(aof: &Aof, i: usize) -> blinkdb_engine::Lsn {
    let key = format!("k{i}");
    let value = [b'v'; 100];
    aof.append(|w| w.command(&[b"SET", key.as_bytes(), &value]))
        .unwrap()
        .0
}

fn wait_until(what: &str, done: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn no_then_everysec_then_always_then_no() {
    let dir = tempfile::tempdir().unwrap();
    let storage = FaultStorage::new();
    let aof = open(dir.path(), FsyncPolicy::No, &storage);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    // Under `no`, nothing is synced, over several rotated incr files.
    let mut last = set(&aof, 0);
    for i in 1..200 {
        last = set(&aof, i);
    }
    aof.commit(last).unwrap();
    // (Each rotation syncs the manifest it rewrites: count from here.)
    let before = storage.sync_count();
    std::thread::sleep(Duration::from_millis(1200));
    assert_eq!(storage.sync_count(), before, "`no` never syncs");
    assert!(aof.stats().rotations > 0, "the test needs rotated files");

    // Leaving `no`: one sync at once, covering the rotated files too.
    aof.set_fsync_policy(FsyncPolicy::EverySec);
    assert_eq!(aof.fsync_policy(), FsyncPolicy::EverySec);
    wait_until("the sync at the change", || aof.stats().synced_lsn >= last);
    let synced_at_change = storage.sync_count() - before;
    assert!(
        synced_at_change > aof.stats().rotations,
        "rotated files synced too: {synced_at_change} syncs"
    );

    // `everysec` goes on syncing by itself.
    last = set(&aof, 1000);
    aof.commit(last).unwrap();
    wait_until("the next second's sync", || aof.stats().synced_lsn >= last);

    // `always`: the wait resolves only once synced.
    aof.set_fsync_policy(FsyncPolicy::Always);
    last = set(&aof, 1001);
    rt.block_on(aof.wait_synced(last)).unwrap();
    assert!(aof.stats().synced_lsn >= last);

    // A waiter of `always` when the policy becomes `no` is answered (by the sync it asked
    // for, or the change's sync if the thread saw `no` first), and the change syncs.
    last = set(&aof, 1002);
    aof.commit(last).unwrap();
    let waiter = {
        let aof = aof.clone();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .build()
                .unwrap();
            rt.block_on(aof.wait_synced(last))
        })
    };
    aof.set_fsync_policy(FsyncPolicy::No);
    assert!(waiter.join().unwrap().is_ok());
    wait_until("the change's sync", || aof.stats().synced_lsn >= last);
    drop(aof);
    assert_eq!(
        load_all(&Aof::open(options(dir.path())).unwrap()).0.len(),
        203
    );
}
