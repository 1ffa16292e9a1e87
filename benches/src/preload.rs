//! Fills the keyspace (`key:0` .. `key:keys-1`) with SETs before a measured run.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bytes::BytesMut;

use crate::connection::{Connection, ReplyKind};
use crate::workload::{put_array_header, put_bulk, value_of_size, write_key};

/// Bytes of SET commands sent per round trip: deep enough to hide latency, small enough
/// that 256 KB values do not build huge buffers.
const BATCH_BYTES: usize = 1 << 20;

/// Connections used for preloading; more would only contend on a 2-core box.
const MAX_PRELOAD_CONNECTIONS: usize = 8;

pub async fn preload(
    host: &str,
    port: u16,
    clients: usize,
    keys: u64,
    value_size: usize,
) -> Result<(), String> {
    let next_key = Arc::new(AtomicU64::new(0));
    let value = Arc::new(value_of_size(value_size));
    let per_batch = (BATCH_BYTES / (value_size + 40)).clamp(1, 1024) as u64;
    let mut tasks = Vec::new();
    for _ in 0..clients.clamp(1, MAX_PRELOAD_CONNECTIONS) {
        let mut connection = Connection::open(host, port).await?;
        let next_key = Arc::clone(&next_key);
        let value = Arc::clone(&value);
        tasks.push(tokio::spawn(async move {
            let mut out = BytesMut::new();
            let mut key = Vec::with_capacity(16);
            loop {
                let first = next_key.fetch_add(per_batch, Ordering::Relaxed);
                if first >= keys {
                    return Ok::<(), String>(());
                }
                let last = (first + per_batch).min(keys);
                out.clear();
                for n in first..last {
                    key.clear();
                    write_key(&mut key, n);
                    put_array_header(&mut out, 3);
                    put_bulk(&mut out, b"SET");
                    put_bulk(&mut out, &key);
                    put_bulk(&mut out, &value);
                }
                connection.send(&out).await?;
                for _ in first..last {
                    if let ReplyKind::Error(text) = connection.read_reply().await? {
                        return Err(format!("preload SET failed: {text}"));
                    }
                }
            }
        }));
    }
    for task in tasks {
        task.await.map_err(|e| format!("preload task: {e}"))??;
    }
    Ok(())
}
