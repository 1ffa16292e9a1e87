//! AOF append + commit throughput: one group write per batch of 64 SET records
//! (16-byte keys, 100-byte values), under appendfsync everysec and no.
//! Run: cargo bench -p blinkdb-benches --bench aof

use blinkdb_engine::{Aof, AofOptions, FsyncPolicy};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};

const BATCH: usize = 64;

fn bench_append_commit(c: &mut Criterion) {
    let mut group = c.benchmark_group("aof_append_commit_64_sets");
    group.throughput(Throughput::Elements(BATCH as u64));
    for (name, policy) in [("everysec", FsyncPolicy::EverySec), ("no", FsyncPolicy::No)] {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut opts = AofOptions::new(dir.path().join("appendonlydir"));
        opts.fsync = policy;
        let aof = Aof::open(opts).expect("open");
        aof.load(|_| Ok(()), |_| {}).expect("load");
        let keys: Vec<Vec<u8>> = (0..BATCH)
            .map(|i| format!("key:{i:012}").into_bytes())
            .collect();
        let value = vec![b'v'; 100];
        group.bench_function(name, |b| {
            b.iter(|| {
                let (lsn, _) = aof
                    .append(|w| {
                        for k in &keys {
                            w.command(&[b"SET", k, &value]);
                        }
                    })
                    .expect("append");
                aof.commit(lsn).expect("commit");
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench_append_commit);
criterion_main!(benches);
