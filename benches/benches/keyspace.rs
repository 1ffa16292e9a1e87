//! Keyspace get/set/miss in process, on a database of 1M keys: the cost of
//! the sharded index alone (hash, shard lock, map probe), without the
//! network or the protocol.
//!
//! Run: cargo bench -p blinkdb-benches --bench keyspace

use blinkdb_engine::{Engine, EngineOptions, Entry};
use criterion::{criterion_group, criterion_main, Criterion};
use std::hint::black_box;

const KEYS: u64 = 1_000_000;
/// Consecutive operations step by a prime so they hit unrelated shards.
const STEP: u64 = 7919;

fn key(i: u64) -> [u8; 16] {
    let mut k = *b"key:000000000000";
    k[4..].copy_from_slice(format!("{:012}", i % KEYS).as_bytes());
    k
}

fn loaded_engine(dir: &std::path::Path) -> Engine {
    let engine = Engine::new(EngineOptions {
        data_dir: dir.to_path_buf(),
        ..EngineOptions::default()
    });
    for i in 0..KEYS {
        let k = key(i);
        engine.write1(0, &k, |tx| tx.insert(0, &k, Entry::string(&b"xxx"[..])));
    }
    engine
}

fn keyspace(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let engine = loaded_engine(dir.path());
    let mut g = c.benchmark_group("keyspace_1M");
    let mut i = 0u64;
    g.bench_function("get_hit", |b| {
        b.iter(|| {
            i = i.wrapping_add(STEP);
            let k = key(i);
            engine.read(0, black_box(&k), |e| black_box(e.is_some()))
        })
    });
    g.bench_function("get_miss", |b| {
        b.iter(|| {
            i = i.wrapping_add(STEP);
            let mut k = key(i);
            k[0] = b'm';
            engine.read(0, black_box(&k), |e| black_box(e.is_some()))
        })
    });
    g.bench_function("set_overwrite", |b| {
        b.iter(|| {
            i = i.wrapping_add(STEP);
            let k = key(i);
            engine.write1(0, &k, |tx| tx.insert(0, &k, Entry::string(&b"yyy"[..])))
        })
    });
    g.finish();
}

criterion_group!(benches, keyspace);
criterion_main!(benches);
