//! Failed writes (ENOSPC with part of the batch landed) put the AOF in an error state with
//! Redis's MISCONF text, the torn bytes are truncated away, a later retry succeeds and
//! clears the error, and no acknowledged byte is lost or corrupted.

use std::sync::Arc;

use crate::common::{cmd, load_all, options};
use blinkdb_engine::{Aof, AofError, FaultStorage};

#[test]
fn enospc_sets_error_state_and_retry_recovers() {
    let dir = tempfile::tempdir().unwrap();
    let opts = options(dir.path());
    let storage = FaultStorage::new();
    let aof = Aof::open_with(opts.clone(), Arc::new(storage.clone())).unwrap();
    load_all(&aof);
    let path = opts.dir.join("appendonly.aof.1.incr.aof");
    let mut acked = Vec::new();
    for i in 0..5 {
        let key = format!("ok{i}");
        let (lsn, _) = aof
            .append(|w| w.command(&[b"SET", key.as_bytes(), b"1"]))
            .unwrap();
        aof.commit(lsn).unwrap();
        acked.push(cmd(&[b"SET", key.as_bytes(), b"1"]));
    }
    let good_len = std::fs::metadata(&path).unwrap().len();
    assert!(aof.write_status().is_ok());

    storage.set_disk_full(Some(7));
    let (lsn, _) = aof.append(|w| w.command(&[b"SET", b"late", b"2"])).unwrap();
    let err = aof.commit(lsn).unwrap_err();
    assert!(matches!(err, AofError::WriteFailed { .. }));
    let status = aof.write_status().unwrap_err().to_string();
    assert_eq!(
        status,
        "MISCONF Errors writing to the AOF file: No space left on device"
    );
    assert_eq!(
        aof.stats().last_write_error.as_deref(),
        Some("No space left on device")
    );
    assert_eq!(
        std::fs::metadata(&path).unwrap().len(),
        good_len,
        "torn bytes removed"
    );
    // Still failing: more appends queue up, nothing is acknowledged.
    let (lsn2, _) = aof
        .append(|w| w.command(&[b"SET", b"later", b"3"]))
        .unwrap();
    assert!(aof.commit(lsn2).is_err());

    storage.set_disk_full(None);
    aof.commit(lsn2).unwrap();
    assert!(
        aof.write_status().is_ok(),
        "a successful retry clears the error"
    );
    assert!(aof.stats().last_write_error.is_none());
    acked.push(cmd(&[b"SET", b"late", b"2"]));
    acked.push(cmd(&[b"SET", b"later", b"3"]));
    drop(aof);

    let aof = Aof::open(opts).unwrap();
    let (cmds, stats) = load_all(&aof);
    assert_eq!(cmds, acked);
    assert!(stats.truncated.is_none());
}
