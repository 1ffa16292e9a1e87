//! Debian's redis-server 7 starts from a directory written by this module and serves the
//! keys (small and blob-sized values) with their TTLs.

use std::time::{SystemTime, UNIX_EPOCH};

use crate::common::{load_all, options, RedisServer};
use blinkdb_engine::Aof;

#[test]
fn redis_server_loads_our_aof_directory() {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = options(dir.path());
    opts.segment_size = 32 << 10;
    let now_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let expire_at = (now_ms + 3_600_000).to_string();
    let big: Vec<u8> = (0..50_000u32).map(|i| b'a' + (i % 26) as u8).collect();
    {
        let aof = Aof::open(opts.clone()).unwrap();
        load_all(&aof);
        for i in 0..20 {
            let key = format!("key:{i}");
            let value = format!("value-{i}");
            let (lsn, _) = aof
                .append(|w| {
                    w.command(&[b"SET", key.as_bytes(), value.as_bytes()]);
                    if i % 2 == 0 {
                        w.command(&[b"PEXPIREAT", key.as_bytes(), expire_at.as_bytes()]);
                    }
                })
                .unwrap();
            aof.commit(lsn).unwrap();
        }
        let (lsn, _) = aof
            .append(|w| {
                w.command(&[b"SET", b"big", &big]);
                w.command(&[b"DEL", b"key:19"]);
            })
            .unwrap();
        aof.commit(lsn).unwrap();
        let (lsn, _) = aof
            .append(|w| w.command(&[b"SET", b"after", b"rotation"]))
            .unwrap();
        aof.commit(lsn).unwrap();
        aof.close().unwrap();
    }
    assert!(
        opts.dir.join("appendonly.aof.2.incr.aof").exists(),
        "rotation happened"
    );
    let d = dir.path().to_str().unwrap();
    let redis = RedisServer::start(
        17301,
        &[
            "--dir",
            d,
            "--appendonly",
            "yes",
            "--appenddirname",
            "appendonlydir",
        ],
    );
    assert_eq!(redis.cli(&["DBSIZE"]).trim(), "21");
    assert_eq!(redis.cli(&["GET", "key:3"]).trim(), "value-3");
    assert_eq!(redis.cli(&["GET", "key:19"]).trim(), "");
    let pttl: i64 = redis.cli(&["PTTL", "key:4"]).trim().parse().unwrap();
    assert!(pttl > 3_000_000 && pttl <= 3_600_000, "pttl {pttl}");
    assert_eq!(redis.cli(&["PTTL", "key:5"]).trim(), "-1");
    assert_eq!(redis.cli(&["GET", "after"]).trim(), "rotation");
    assert_eq!(redis.cli(&["GET", "big"]).trim_end().as_bytes(), &big[..]);
}
