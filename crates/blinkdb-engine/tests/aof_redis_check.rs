//! Debian's redis-check-aof (Redis 7) accepts a directory written by this module,
//! including `#BK` annotations, blobs, several incr files and a rewritten base.

use std::process::Command;

use crate::common::{load_all, options};
use blinkdb_engine::Aof;

#[test]
fn redis_check_aof_accepts_our_directory() {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = options(dir.path());
    opts.segment_size = 64 << 10;
    let aof = Aof::open(opts.clone()).unwrap();
    load_all(&aof);
    let big = vec![b'z'; 100_000];
    for i in 0..50 {
        let key = format!("k{i}");
        let value: &[u8] = if i % 10 == 0 { &big } else { b"small" };
        let (lsn, _) = aof
            .append(|w| {
                w.command(&[b"SET", key.as_bytes(), value]);
                w.command(&[b"PEXPIREAT", key.as_bytes(), b"4102444800000"]);
            })
            .unwrap();
        aof.commit(lsn).unwrap();
    }
    assert!(aof.manifest().incr.len() > 3);
    check(&opts.dir.join("appendonly.aof.manifest"));
    let mut base = aof.begin_rewrite().unwrap();
    base.command(&[b"SET", b"rewritten", &big]).unwrap();
    aof.finish_rewrite(base).unwrap();
    let (lsn, _) = aof.append(|w| w.command(&[b"DEL", b"k1"])).unwrap();
    aof.commit(lsn).unwrap();
    aof.close().unwrap();

    check(&opts.dir.join("appendonly.aof.manifest"));
}

fn check(manifest: &std::path::Path) {
    let out = Command::new("redis-check-aof")
        .arg(manifest)
        .output()
        .expect("redis-check-aof (Debian redis-tools) must be installed");
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    println!("{text}");
    assert!(out.status.success(), "{text}");
    assert!(text.contains("is valid"), "{text}");
    assert!(!text.contains("not valid"), "{text}");
}
