//! Bloom filter speed where the filter is far beyond cache (64 MiB file, 1M lines,
//! 20M items in), measured two ways:
//! * `bloom_64MiB`: one item per iteration, so each op waits for its own cache miss
//!   (single-op latency);
//! * `bloom_64MiB_batch128`: 128 items per iteration through the batch calls, which
//!   hash first and prefetch lines ahead so misses overlap (throughput, per item).
//!
//! Also `bf_128`: BF.MADD / BF.MEXISTS of 128 items on a ~67 MB scalable filter, and
//! `bloom_64KiB` / `bloom_64KiB_batch128`: a filter that fits in L2, which shows the
//! compute cost alone (it saturates during `add_shared`, so its later adds mostly find
//! their bits set).
//!
//! Run: cargo bench -p blinkdb-benches --bench bloom

use blinkdb_engine::bf::{BloomConfig, BloomFile, BloomLimits, Geometry, ScalableBloom};
use criterion::{criterion_group, criterion_main, Bencher, Criterion, Throughput};
use std::hint::black_box;
use std::time::{Duration, Instant};

const LINES: u64 = 1 << 20;
const PREFILL: u64 = 20_000_000;
const BATCH: usize = 128;
/// Present-item probes step by a prime so consecutive probes hit unrelated lines.
const PROBE_STEP: u64 = 7919;

fn keys(first: u64, step: u64, modulo: u64) -> [[u8; 8]; BATCH] {
    std::array::from_fn(|i| ((first + i as u64 * step) % modulo).to_le_bytes())
}

/// Times `run` over batches of keys made by `make` outside the timed loop (key
/// generation divides per key, ~1 ns/item, which is not the filter's cost). Keys are
/// made 1024 batches (1 MB) at a time, and each result is dropped at once, as a
/// server drops its reply buffer. With criterion's `iter_batched` (which holds a whole
/// round's inputs and outputs) BF.MADD read ~9 ns/item slower than with either.
fn timed_batches<T>(
    b: &mut Bencher,
    mut make: impl FnMut() -> [[u8; 8]; BATCH],
    mut run: impl FnMut(&[[u8; 8]; BATCH]) -> T,
) {
    let mut pending = Vec::with_capacity(1024);
    b.iter_custom(|iters| {
        let mut total = Duration::ZERO;
        let mut left = iters;
        while left > 0 {
            let round = left.min(1024);
            pending.clear();
            pending.extend((0..round).map(|_| make()));
            let start = Instant::now();
            for batch in &pending {
                black_box(run(batch));
            }
            total += start.elapsed();
            left -= round;
        }
        total
    })
}

fn filled_file(dir: &std::path::Path, lines: u64, items: u64) -> BloomFile {
    let geometry = Geometry::for_file_bytes(2 * items, 64 + lines * 64).unwrap();
    let mut filter = BloomFile::create(&dir.join(format!("{lines}.bloom")), geometry).unwrap();
    let mut batch = Vec::with_capacity(BATCH);
    for chunk_start in (0..items).step_by(BATCH) {
        batch.clear();
        batch.extend((chunk_start..(chunk_start + BATCH as u64).min(items)).map(u64::to_le_bytes));
        filter.insert_many_exclusive(&batch);
    }
    filter
}

fn single_ops(c: &mut Criterion, filter: &mut BloomFile, name: &str, items: u64) {
    let mut group = c.benchmark_group(name);
    group.throughput(Throughput::Elements(1));
    let mut next = items;
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
            probe = (probe + PROBE_STEP) % items;
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

fn batched_ops(c: &mut Criterion, filter: &mut BloomFile, name: &str, items: u64) {
    let mut group = c.benchmark_group(name);
    group.throughput(Throughput::Elements(BATCH as u64));
    // Fresh items past everything the single-op group added.
    let mut next = 1u64 << 40;
    group.bench_function("add_shared", |b| {
        timed_batches(
            b,
            || {
                next += BATCH as u64;
                keys(next, 1, u64::MAX)
            },
            |batch| filter.insert_many(batch),
        )
    });
    group.bench_function("add_exclusive", |b| {
        timed_batches(
            b,
            || {
                next += BATCH as u64;
                keys(next, 1, u64::MAX)
            },
            |batch| filter.insert_many_exclusive(batch),
        )
    });
    let mut probe = 0u64;
    group.bench_function("exists_present", |b| {
        timed_batches(
            b,
            || {
                probe = (probe + BATCH as u64 * PROBE_STEP) % items;
                keys(probe, PROBE_STEP, items)
            },
            |batch| filter.contains_many(batch),
        )
    });
    let mut absent = u64::MAX / 2;
    group.bench_function("exists_absent", |b| {
        timed_batches(
            b,
            || {
                absent -= BATCH as u64;
                keys(absent, 1, u64::MAX)
            },
            |batch| filter.contains_many(batch),
        )
    });
    group.finish();
}

/// BF.MADD / BF.MEXISTS as the engine runs them: 50M capacity at 1% (~67 MB, one
/// sub-filter), 20M items in. MADD keys wrap within the capacity so the chain never
/// grows mid-run (after 30M fresh items MADD re-adds present ones).
fn scalable_ops(c: &mut Criterion, dir: &std::path::Path) {
    const CAPACITY: u64 = 50_000_000;
    let limits = BloomLimits::default();
    let config = BloomConfig {
        capacity: CAPACITY,
        ..BloomConfig::default()
    };
    let mut filter = ScalableBloom::create(dir, 1, config, &limits).unwrap();
    for first in (0..PREFILL).step_by(BATCH) {
        let batch = keys(first, 1, u64::MAX);
        filter.madd(batch.iter().map(|k| &k[..]), &limits);
    }
    assert_eq!(filter.info().filters, 1);
    let mut group = c.benchmark_group("bf_128");
    group.throughput(Throughput::Elements(BATCH as u64));
    let mut next = PREFILL;
    group.bench_function("madd", |b| {
        timed_batches(
            b,
            || {
                next = (next + BATCH as u64) % CAPACITY;
                keys(next, 1, CAPACITY)
            },
            |batch| filter.madd(batch.iter().map(|k| &k[..]), &limits),
        )
    });
    let mut probe = 0u64;
    group.bench_function("mexists", |b| {
        timed_batches(
            b,
            || {
                probe = (probe + BATCH as u64 * PROBE_STEP) % PREFILL;
                keys(probe, PROBE_STEP, PREFILL)
            },
            |batch| filter.mexists(batch.iter().map(|k| &k[..])),
        )
    });
    group.finish();
    assert_eq!(filter.info().filters, 1, "the chain grew during the run");
}

fn bloom(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let mut small = filled_file(dir.path(), 1 << 10, 20_000);
    single_ops(c, &mut small, "bloom_64KiB", 20_000);
    batched_ops(c, &mut small, "bloom_64KiB_batch128", 20_000);
    drop(small);
    let mut filter = filled_file(dir.path(), LINES, PREFILL);
    single_ops(c, &mut filter, "bloom_64MiB", PREFILL);
    batched_ops(c, &mut filter, "bloom_64MiB_batch128", PREFILL);
    drop(filter);
    scalable_ops(c, dir.path());
}

criterion_group!(benches, bloom);
criterion_main!(benches);
