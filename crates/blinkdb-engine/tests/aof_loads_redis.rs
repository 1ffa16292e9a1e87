//! This module loads AOF directories written by Debian's redis-server 7
//! (`--aof-use-rdb-preamble no`): incr files only, then a BGREWRITEAOF base plus a new
//! incr file. Replaying the commands gives the state Redis reports.

use std::collections::HashMap;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::common::{load_all, RedisServer};
use blinkdb_engine::{Aof, AofOptions, FsyncPolicy};

/// The subset of Redis string semantics the scenario uses.
fn replay(cmds: &[Vec<Vec<u8>>]) -> HashMap<Vec<u8>, Vec<u8>> {
    let mut db: HashMap<Vec<u8>, Vec<u8>> = HashMap::new();
    for c in cmds {
        let name = String::from_utf8_lossy(&c[0]).to_ascii_uppercase();
        match name.as_str() {
            "SET" => {
                db.insert(c[1].clone(), c[2].clone());
            }
            "DEL" => {
                for k in &c[1..] {
                    db.remove(k);
                }
            }
            "INCR" => {
                let v = db
                    .get(&c[1])
                    .map_or(0, |v| String::from_utf8_lossy(v).parse::<i64>().unwrap());
                db.insert(c[1].clone(), (v + 1).to_string().into_bytes());
            }
            "APPEND" => db.entry(c[1].clone()).or_default().extend_from_slice(&c[2]),
            "PEXPIREAT" | "SELECT" | "EXPIRE" | "PEXPIRE" => {}
            other => panic!("unexpected command in Redis AOF: {other}"),
        }
    }
    db
}

fn redis_state(r: &RedisServer, keys: &[&str]) -> HashMap<Vec<u8>, Vec<u8>> {
    let mut m = HashMap::new();
    for k in keys {
        let v = r.cli(&["--no-raw", "EXISTS", k]);
        if v.trim() == "(integer) 1" {
            let val = r.cli(&["GET", k]);
            m.insert(
                k.as_bytes().to_vec(),
                val.trim_end_matches('\n').as_bytes().to_vec(),
            );
        }
    }
    m
}

fn load_copy(aofdir: &Path) -> (HashMap<Vec<u8>, Vec<u8>>, usize) {
    let work = tempfile::tempdir().unwrap();
    let dst = work.path().join("appendonlydir");
    std::fs::create_dir_all(&dst).unwrap();
    for e in std::fs::read_dir(aofdir).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), dst.join(e.file_name())).unwrap();
    }
    let mut o = AofOptions::new(&dst);
    o.fsync = FsyncPolicy::No;
    o.blob_threshold = 1024;
    let aof = Aof::open(o).unwrap();
    let (cmds, _) = load_all(&aof);
    let files = aof.manifest().incr.len() + usize::from(aof.manifest().base.is_some());
    (replay(&cmds), files)
}

#[test]
fn loads_redis_written_aof_before_and_after_rewrite() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let r = RedisServer::start(
        17302,
        &[
            "--dir",
            d,
            "--appendonly",
            "yes",
            "--aof-use-rdb-preamble",
            "no",
            "--appendfsync",
            "always",
            "--aof-timestamp-enabled",
            "yes",
        ],
    );
    let keys = ["a", "b", "c", "n", "big", "gone", "t"];
    let big = "x".repeat(5000);
    for args in [
        vec!["SET", "a", "1"],
        vec!["SET", "gone", "soon"],
        vec!["DEL", "gone"],
        vec!["INCR", "n"],
        vec!["INCR", "n"],
        vec!["APPEND", "b", "hello"],
        vec!["APPEND", "b", " world"],
        vec!["SET", "t", "ttl", "EX", "1000"],
        vec!["EXPIRE", "a", "5000"],
        vec!["SET", "big", &big],
    ] {
        r.cli(&args);
    }
    r.cli(&[
        "EVAL",
        "redis.call('SET','c','tx'); redis.call('INCR','n')",
        "0",
    ]);
    let aofdir = dir.path().join("appendonlydir");
    let (state, files) = load_copy(&aofdir);
    assert_eq!(state, redis_state(&r, &keys));
    assert!(files >= 1);

    r.cli(&["BGREWRITEAOF"]);
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let info = r.cli(&["INFO", "persistence"]);
        if info.contains("aof_rewrite_in_progress:0") && info.contains("aof_rewrite_scheduled:0") {
            break;
        }
        assert!(Instant::now() < deadline, "rewrite did not finish");
        std::thread::sleep(Duration::from_millis(50));
    }
    // redis-cli runs each command on its own connection, so use a pipeline for MULTI.
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg("printf 'MULTI\\r\\nAPPEND b !\\r\\nINCR n\\r\\nDEL c\\r\\nEXEC\\r\\n' | redis-cli -h 127.0.0.1 -p 17302")
        .output()
        .unwrap();
    assert!(out.status.success());
    let manifest = std::fs::read_to_string(aofdir.join("appendonly.aof.manifest")).unwrap();
    assert!(
        manifest.contains("type b") && manifest.contains("base.aof"),
        "{manifest}"
    );
    let (state, files) = load_copy(&aofdir);
    assert!(files >= 2, "{manifest}");
    assert_eq!(state, redis_state(&r, &keys));
    assert_eq!(state.get(b"b".as_slice()).unwrap(), b"hello world!");
}
