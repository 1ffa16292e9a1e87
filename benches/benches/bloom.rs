//! add / exists on a 64 MiB memory-mapped Bloom file (1M lines, half full).
//! Run: cargo bench -p blinkdb-benches --bench bloom

use blinkdb_engine::filter::{BloomFile, Geometry};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use std::hint::black_box;

const LINES: u64 = 1 << 20;
const PREFILL: u64 = 20_000_000;

fn bloom(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let geometry = Geometry::for_file_bytes(2 * PREFILL, 64 + LINES * 64).unwrap();
    let mut filter = BloomFile::create(&dir.path().join("bench.bloom"), geometry).unwrap();
    for i in 0..PREFILL {
        filter.insert_exclusive(&i.to_le_bytes());
    }
    let mut group = c.benchmark_group("bloom_64MiB");
    group.throughput(Throughput::Elements(1));
    let mut next = PREFILL;
    group.bench_function("add_shared", |b| {
        b.iter(|| {
            next += 1;
            black_box(filter.insert(&next.to_le_bytes()))
        })
    });
    group.bench_function("add_exclusive", |b| {
        b.iter(|| {
            next += 1;
            black_box(filter.insert_exclusive(&next.to_le_bytes()))
        })
    });
    let mut probe = 0u64;
    group.bench_function("exists_present", |b| {
        b.iter(|| {
            probe = (probe + 7919) % PREFILL;
            black_box(filter.contains(&probe.to_le_bytes()))
        })
    });
    let mut absent = u64::MAX;
    group.bench_function("exists_absent", |b| {
        b.iter(|| {
            absent -= 1;
            black_box(filter.contains(&absent.to_le_bytes()))
        })
    });
    group.finish();
}

criterion_group!(benches, bloom);
criterion_main!(benches);
