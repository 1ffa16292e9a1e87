//! RESP2 decode and encode of a pipelined batch of 64 SET commands, through redis-protocol.

use bytes::{Bytes, BytesMut};
use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use redis_protocol::resp2::decode::{decode_bytes, decode_range};
use redis_protocol::resp2::encode::extend_encode;
use redis_protocol::resp2::types::BytesFrame;

const BATCH: usize = 64;

fn set_command(n: usize, value: &Bytes) -> BytesFrame {
    BytesFrame::Array(vec![
        BytesFrame::BulkString(Bytes::from_static(b"SET")),
        BytesFrame::BulkString(Bytes::from(format!("key:{n:012}"))),
        BytesFrame::BulkString(value.clone()),
    ])
}

fn batch_frames(value_size: usize) -> Vec<BytesFrame> {
    let value = Bytes::from(vec![b'v'; value_size]);
    (0..BATCH).map(|n| set_command(n, &value)).collect()
}

fn encode_batch(frames: &[BytesFrame]) -> BytesMut {
    let mut buf = BytesMut::new();
    for frame in frames {
        extend_encode(&mut buf, frame, false).expect("SET frames encode");
    }
    buf
}

fn bench_resp(c: &mut Criterion) {
    for value_size in [3usize, 1024] {
        let frames = batch_frames(value_size);
        let wire = encode_batch(&frames).freeze();
        let mut group = c.benchmark_group(format!("resp2/set-x{BATCH}/{value_size}B"));
        group.throughput(Throughput::Elements(BATCH as u64));

        group.bench_function("encode", |b| {
            b.iter(|| encode_batch(std::hint::black_box(&frames)))
        });

        // Zero-copy frames that slice the input buffer, as a server's read loop would get.
        group.bench_function("decode_bytes", |b| {
            b.iter_batched(
                || wire.clone(),
                |mut rest| {
                    let mut decoded = 0;
                    while let Some((frame, used)) = decode_bytes(&rest).expect("valid batch") {
                        std::hint::black_box(frame);
                        let _ = rest.split_to(used);
                        decoded += 1;
                    }
                    assert_eq!(decoded, BATCH);
                },
                BatchSize::SmallInput,
            )
        });

        // Offsets only: the cheapest way to walk a batch (what the load generator does).
        group.bench_function("decode_range", |b| {
            b.iter(|| {
                let mut at = 0;
                let mut decoded = 0;
                while let Some((frame, used)) = decode_range(&wire[at..]).expect("valid batch") {
                    std::hint::black_box(frame);
                    at += used;
                    decoded += 1;
                }
                assert_eq!(decoded, BATCH);
            })
        });
        group.finish();
    }
}

criterion_group!(benches, bench_resp);
criterion_main!(benches);
