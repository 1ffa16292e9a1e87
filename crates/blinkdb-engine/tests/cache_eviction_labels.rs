//! Cache mode's dependency tracking: each entry is labeled with the oldest segment its
//! value needs; dropping a segment evicts exactly the entries below the cut and logs a
//! DEL for each of them that a surviving record mentions. The scenario writes through
//! the engine's transaction API the way the server's SET/APPEND/EXPIRE handlers do,
//! then reads back the surviving files to check what a replay would see.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use blinkdb_engine::{
    Aof, AofArg, AofOptions, Engine, EngineOptions, Entry, EvictStep, Log, Meta, Origin, Value,
};

fn set(e: &Engine, key: &[u8], val: &[u8]) {
    e.write1(0, key, |tx| {
        tx.log(0, &[b"SET", key, val]);
        tx.insert_after_log(0, key, Entry::string(val));
    });
}

fn append(e: &Engine, key: &[u8], suffix: &[u8]) {
    e.write1(0, key, |tx| {
        let mut v = tx
            .get(0, key)
            .and_then(|en| en.value().as_str().map(|s| s.to_vec()))
            .unwrap_or_default();
        v.extend_from_slice(suffix);
        tx.log(0, &[b"APPEND", key, suffix]);
        tx.insert(0, key, Entry::string(&v));
    });
}

fn pexpireat(e: &Engine, key: &[u8], at: u64) {
    e.write1(0, key, |tx| {
        tx.set_expire(0, key, at);
        tx.log(0, &[b"PEXPIREAT", key, at.to_string().as_bytes()]);
    });
}

fn origin(e: &Engine, key: &[u8]) -> Option<(u64, bool)> {
    e.read(0, key, |en| {
        en.map(|en| (en.origin().seg(), en.origin().touched()))
    })
}

fn replay_all(dir: &std::path::Path) -> Vec<Vec<Vec<u8>>> {
    let aof = Aof::open(AofOptions::new(dir)).unwrap();
    let mut cmds = Vec::new();
    aof.load(
        |c| {
            cmds.push(
                c.args
                    .into_iter()
                    .map(|a| match a {
                        AofArg::Inline(b) => b.to_vec(),
                        AofArg::Blob(_) => b"<blob>".to_vec(),
                    })
                    .collect(),
            );
            Ok(())
        },
        |_| {},
    )
    .unwrap();
    cmds
}

#[test]
fn dropping_a_segment_evicts_its_dependents_and_deletes_touched_ones() {
    let dir = tempfile::tempdir().unwrap();
    let aofdir = dir.path().join("appendonlydir");
    let mut opts = AofOptions::new(&aofdir);
    opts.segment_size = 4096;
    let aof = Aof::open(opts).unwrap();
    aof.load(|_| Ok(()), |_| {}).unwrap();
    let engine = Engine::new(EngineOptions {
        data_dir: dir.path().to_path_buf(),
        ..EngineOptions::default()
    });
    engine.set_log(Arc::new(Log::new(aof, true, 16 << 10)));
    let log = engine.log_handle().unwrap().clone();

    // Segment 1: four keys.
    for k in [&b"appended"[..], b"reset", b"expiring", b"untouched"] {
        set(&engine, k, b"v1");
    }
    assert_eq!(origin(&engine, b"appended"), Some((1, false)));
    // Fill segment 1 so that the next record rotates to segment 2.
    set(&engine, b"filler", &[b'x'; 5000]);
    assert_eq!(origin(&engine, b"filler"), Some((1, false)));

    // Segment 2: an APPEND and a TTL keep the segment-1 label (and mark the
    // entries touched); a new SET relabels.
    append(&engine, b"appended", b"+more");
    pexpireat(&engine, b"expiring", 4_000_000_000_000);
    set(&engine, b"reset", b"v2");
    assert_eq!(log.aof.append_seq(), 2);
    assert_eq!(origin(&engine, b"appended"), Some((1, true)));
    assert_eq!(origin(&engine, b"expiring"), Some((1, true)));
    assert_eq!(origin(&engine, b"reset"), Some((2, false)));
    assert_eq!(origin(&engine, b"untouched"), Some((1, false)));

    let step = engine.evict_oldest_segment().unwrap();
    let EvictStep::Dropped(ev) = step else {
        panic!("expected an eviction, got {step:?}");
    };
    assert_eq!(ev.file, "incr#1");
    assert_eq!(ev.keys, 4, "appended, expiring, untouched, filler");
    assert_eq!(ev.dels_logged, 2, "only the keys later records mention");
    assert_eq!(engine.stats.evicted_keys.load(Ordering::Relaxed), 4);
    for gone in [&b"appended"[..], b"expiring", b"untouched", b"filler"] {
        assert_eq!(origin(&engine, gone), None);
    }
    assert_eq!(
        engine.read(0, b"reset", |en| en.map(|en| en.value().clone())),
        Some(Value::Str(
            (&b"v2"[..]).into(),
            Meta::new(Origin::new(2, false))
        ))
    );
    let m = log.aof.manifest();
    assert!(
        m.incr.iter().all(|e| e.seq != 1),
        "incr 1 left the manifest"
    );
    assert!(!aofdir.join("appendonly.aof.1.incr.aof").exists());

    // What a restart replays: segment 2 then the DELs, which end with only
    // `reset` present, as in memory.
    drop(log);
    drop(engine);
    let cmds = replay_all(&aofdir);
    let sets: Vec<&[u8]> = cmds
        .iter()
        .filter(|c| c[0].eq_ignore_ascii_case(b"SET"))
        .map(|c| &c[1][..])
        .collect();
    assert_eq!(sets, vec![&b"reset"[..]], "segment 1's SETs are gone");
    let pos = |name: &[u8], key: &[u8]| {
        cmds.iter()
            .position(|c| c[0].eq_ignore_ascii_case(name) && c[1] == key)
            .unwrap()
    };
    assert!(pos(b"APPEND", b"appended") < pos(b"DEL", b"appended"));
    assert!(pos(b"PEXPIREAT", b"expiring") < pos(b"DEL", b"expiring"));
    assert!(!cmds
        .iter()
        .any(|c| c[0].eq_ignore_ascii_case(b"DEL") && c[1] == b"untouched"));
}

#[test]
fn the_only_active_file_is_rotated_before_it_is_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let aofdir = dir.path().join("appendonlydir");
    let aof = Aof::open(AofOptions::new(&aofdir)).unwrap();
    aof.load(|_| Ok(()), |_| {}).unwrap();
    let engine = Engine::new(EngineOptions {
        data_dir: dir.path().to_path_buf(),
        ..EngineOptions::default()
    });
    engine.set_log(Arc::new(Log::new(aof, true, 16 << 10)));
    assert_eq!(
        engine.evict_oldest_segment().unwrap(),
        EvictStep::NothingLeft,
        "an empty log has nothing to drop"
    );
    set(&engine, b"k", b"v");
    let EvictStep::Dropped(ev) = engine.evict_oldest_segment().unwrap() else {
        panic!("expected an eviction");
    };
    assert_eq!(
        (ev.file.as_str(), ev.keys, ev.dels_logged),
        ("incr#1", 1, 0)
    );
    // New writes go to the new active file and survive the next call.
    set(&engine, b"k2", b"v");
    assert_eq!(origin(&engine, b"k2"), Some((2, false)));
}
