//! Damage before the tail (a flipped byte in an early batch, garbage instead of RESP)
//! refuses to load with the file and offset in the message, unless allow_corrupt.

use std::fs;

use crate::common::{load_all, options};
use blinkdb_engine::{Aof, AofOptions};

fn write_batches(opts: &AofOptions) -> Vec<u64> {
    let aof = Aof::open(opts.clone()).unwrap();
    load_all(&aof);
    let path = opts.dir.join("appendonly.aof.1.incr.aof");
    let mut ends = vec![0];
    for b in 0..10 {
        let key = format!("key{b}");
        let (lsn, _) = aof
            .append(|w| w.command(&[b"SET", key.as_bytes(), b"some-value"]))
            .unwrap();
        aof.commit(lsn).unwrap();
        ends.push(fs::metadata(&path).unwrap().len());
    }
    ends
}

#[test]
fn flipped_byte_in_middle_batch_is_refused_with_file_and_offset() {
    let dir = tempfile::tempdir().unwrap();
    let opts = options(dir.path());
    let ends = write_batches(&opts);
    let path = opts.dir.join("appendonly.aof.1.incr.aof");
    let mut bytes = fs::read(&path).unwrap();
    // Inside the value of batch 3: RESP stays valid, only the checksum can tell.
    let at = ends[3] as usize + 30;
    bytes[at] ^= 0x01;
    fs::write(&path, &bytes).unwrap();

    let aof = Aof::open(opts.clone()).unwrap();
    let err = aof.load(|_| Ok(()), |_| {}).unwrap_err().to_string();
    let want = format!("appendonly.aof.1.incr.aof at offset {}", ends[3]);
    assert!(err.contains(&want), "{err}");
    assert!(err.contains("checksum"), "{err}");
    drop(aof);
    assert_eq!(
        fs::read(&path).unwrap(),
        bytes,
        "a refused load must not modify the file"
    );

    let mut o = opts.clone();
    o.allow_corrupt = true;
    let aof = Aof::open(o).unwrap();
    let (cmds, stats) = load_all(&aof);
    assert_eq!(cmds.len(), 3, "batches before the damage are kept");
    assert_eq!(stats.skipped_corrupt[0].1, ends[3]);
}

#[test]
fn garbage_instead_of_resp_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let opts = options(dir.path());
    let ends = write_batches(&opts);
    let path = opts.dir.join("appendonly.aof.1.incr.aof");
    let mut bytes = fs::read(&path).unwrap();
    bytes[ends[6] as usize] = b'!';
    fs::write(&path, &bytes).unwrap();
    let aof = Aof::open(opts).unwrap();
    let err = aof.load(|_| Ok(()), |_| {}).unwrap_err().to_string();
    assert!(
        err.contains(&format!("appendonly.aof.1.incr.aof at offset {}", ends[6])),
        "{err}"
    );
}
