//! What an item-log entry costs per new item (docs/bloom-file-format.md, "Item
//! logs"): the xxh3-128 digest every version logs, the RedisBloom MurmurHash64A
//! pair version 2 adds, and, for scale, a BF.MADD of 128 fresh items into a small
//! filter (the engine's add alone, no log, no server).
//!
//! Run: cargo bench -p blinkdb-benches --bench item_log

use blinkdb_engine::bf::{redisbloom_hash, BloomConfig, BloomLimits, ItemHash, ScalableBloom};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use std::hint::black_box;

const BATCH: usize = 128;

/// 16-byte items, as `item:%011d` (the size of a short key or id).
fn items(first: u64) -> Vec<Vec<u8>> {
    (first..first + BATCH as u64)
        .map(|i| format!("item:{i:011}").into_bytes())
        .collect()
}

fn item_log(c: &mut Criterion) {
    let batch = items(0);
    let mut group = c.benchmark_group("item_log_128");
    group.throughput(Throughput::Elements(BATCH as u64));
    group.bench_function("xxh3_digest", |b| {
        b.iter(|| {
            for item in &batch {
                black_box(ItemHash::of(black_box(item)).to_digest());
            }
        })
    });
    group.bench_function("xxh3_digest_and_murmur_pair", |b| {
        b.iter(|| {
            for item in &batch {
                black_box(ItemHash::of(black_box(item)).to_digest());
                black_box(redisbloom_hash(black_box(item)));
            }
        })
    });
    // Fresh items into a filter that stays one 16 MiB sub-filter (capacity 10M,
    // keys wrap below it): the add a new item's log entry accompanies.
    let dir = tempfile::tempdir().unwrap();
    let limits = BloomLimits::default();
    let config = BloomConfig {
        capacity: 10_000_000,
        ..BloomConfig::default()
    };
    let mut filter = ScalableBloom::create(dir.path(), 1, config, &limits).unwrap();
    let mut next = 0u64;
    group.bench_function("madd_fresh", |b| {
        b.iter_batched(
            || {
                next = (next + BATCH as u64) % 10_000_000;
                items(next)
            },
            |batch| black_box(filter.madd(batch.iter().map(|k| &k[..]), &limits)),
            criterion::BatchSize::SmallInput,
        )
    });
    group.finish();
}

criterion_group!(benches, item_log);
criterion_main!(benches);
