//! Commands with 1 KB - 4 MB values survive close + reopen + load byte for byte, across
//! segment rotations, and blobs read back through their refs with checksums.

use crate::common::{cmd, load_all, options};
use blinkdb_engine::{Aof, BlobRef};
use rand::{Rng, RngCore, SeedableRng};

#[test]
fn round_trip_with_large_values_and_rotation() {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = options(dir.path());
    opts.segment_size = 1 << 20;
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let sizes = [
        0usize,
        10,
        1023,
        1024,
        4096,
        65536,
        1 << 20,
        4 << 20,
        3,
        4 << 20,
    ];
    let mut expected = Vec::new();
    let mut refs: Vec<(BlobRef, Vec<u8>)> = Vec::new();
    {
        let aof = Aof::open(opts.clone()).unwrap();
        let (cmds, _) = load_all(&aof);
        assert!(cmds.is_empty());
        for (i, &n) in sizes.iter().enumerate() {
            let mut value = vec![0u8; n];
            rng.fill_bytes(&mut value);
            let key = format!("key:{i}");
            let (lsn, blobs) = aof
                .append(|w| {
                    let b = w.command(&[b"SET", key.as_bytes(), &value]);
                    w.command(&[b"PEXPIREAT", key.as_bytes(), b"1999999999000"]);
                    b
                })
                .unwrap();
            // Blobs are readable even before their batch was written.
            for b in &blobs {
                assert_eq!(aof.read_blob(b, true).unwrap(), value);
            }
            assert_eq!(blobs.len(), usize::from(n >= 1024));
            if rng.gen_bool(0.5) {
                aof.commit(lsn).unwrap();
            }
            refs.extend(blobs.into_iter().map(|b| (b, value.clone())));
            expected.push(cmd(&[b"SET", key.as_bytes(), &value]));
            expected.push(cmd(&[b"PEXPIREAT", key.as_bytes(), b"1999999999000"]));
        }
        let stats = aof.stats();
        assert!(stats.rotations >= 2, "expected rotations, got {stats:?}");
        aof.close().unwrap();
    }
    let aof = Aof::open(opts.clone()).unwrap();
    let (cmds, stats) = load_all(&aof);
    assert_eq!(cmds, expected);
    assert!(stats.truncated.is_none());
    assert!(
        aof.load(|_| Ok(()), |_| {}).is_err(),
        "a second load is refused"
    );
    assert!(aof.manifest().incr.len() >= 3);
    for (r, value) in &refs {
        assert_eq!(aof.read_blob(r, true).unwrap(), value[..]);
    }
    // A flipped checksum in the ref is detected.
    let mut bad = refs[0].0;
    bad.checksum ^= 1;
    assert!(aof.read_blob(&bad, true).is_err());
}

/// Records of hundreds of arguments each (the loader hands a record's inline arguments
/// out as slices of one buffer): small and empty ones, ones that straddle the reader's
/// 256 KB buffer (read piece by piece) and large ones kept in the log, mixed in one
/// record, all come back byte for byte and in order.
#[test]
fn records_of_many_mixed_arguments_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let opts = options(dir.path());
    let mut rng = rand::rngs::StdRng::seed_from_u64(45);
    let mut expected = Vec::new();
    {
        let aof = Aof::open(opts.clone()).unwrap();
        assert!(load_all(&aof).0.is_empty());
        for r in 0..12 {
            let mut args: Vec<Vec<u8>> = vec![b"RPUSH".to_vec(), format!("list:{r}").into_bytes()];
            for _ in 0..300 {
                // Up to 1100 bytes: past the 1024-byte blob threshold now and then.
                let n = if rng.gen_bool(0.1) {
                    0
                } else {
                    rng.gen_range(1..1100)
                };
                let mut v = vec![0u8; n];
                rng.fill_bytes(&mut v);
                args.push(v);
            }
            let refs: Vec<&[u8]> = args.iter().map(|a| &a[..]).collect();
            let (lsn, _) = aof.append(|w| w.command(&refs)).unwrap();
            aof.commit(lsn).unwrap();
            expected.push(args);
        }
        aof.close().unwrap();
    }
    let aof = Aof::open(opts).unwrap();
    let (cmds, stats) = load_all(&aof);
    assert!(stats.truncated.is_none());
    assert_eq!(cmds, expected);
}
