//! Consumer connections for queue cells: producers (the ordinary clients) push items whose
//! value is `__ts__`, the nanoseconds since this process started; each consumer pops them with
//! a blocking command and records how long each item took from push to pop.
//!
//! - `list:KEY`: `BLPOP KEY 1` in a loop.
//! - `stream:KEY:GROUP`: the group is created (MKSTREAM) before the clock starts; each consumer
//!   runs `XREADGROUP GROUP GROUP cN COUNT 16 BLOCK 1000 STREAMS KEY >`, then one `XACK` for
//!   what it read; an entry counts once acknowledged. The entry's first field value is the time.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use bytes::BytesMut;
use tokio::task::JoinHandle;

use crate::connection::Connection;
use crate::stats::Stats;
use crate::workload::{put_array_header, put_bulk};

static EPOCH: OnceLock<Instant> = OnceLock::new();

/// Nanoseconds since the process's epoch: what `__ts__` expands to.
pub fn now_ns() -> u64 {
    EPOCH.get_or_init(Instant::now).elapsed().as_nanos() as u64
}

#[derive(Debug, Clone)]
pub enum Queue {
    List { key: String },
    Stream { key: String, group: String },
}

impl Queue {
    pub fn parse(text: &str) -> Result<Queue, String> {
        let parts: Vec<&str> = text.split(':').collect();
        match parts.as_slice() {
            ["list", key] => Ok(Queue::List {
                key: key.to_string(),
            }),
            ["stream", key, group] => Ok(Queue::Stream {
                key: key.to_string(),
                group: group.to_string(),
            }),
            _ => Err(format!(
                "--consume '{text}': expected list:KEY or stream:KEY:GROUP"
            )),
        }
    }
}

/// A parsed RESP2 reply (consumers read the values they pop).
#[derive(Debug)]
enum Reply {
    Bulk(Vec<u8>),
    Array(Vec<Reply>),
    Int,
    Null,
    Error(String),
    Simple,
}

fn parse(buf: &[u8], at: &mut usize) -> Result<Reply, String> {
    let end = buf[*at..]
        .windows(2)
        .position(|w| w == b"\r\n")
        .map(|p| *at + p)
        .ok_or("truncated reply")?;
    let (tag, line) = (buf[*at], &buf[*at + 1..end]);
    *at = end + 2;
    let number = || -> Result<i64, String> {
        std::str::from_utf8(line)
            .ok()
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| "bad length".to_string())
    };
    Ok(match tag {
        b'+' => Reply::Simple,
        b'-' => Reply::Error(String::from_utf8_lossy(line).into_owned()),
        b':' => Reply::Int,
        b'$' => match number()? {
            n if n < 0 => Reply::Null,
            n => {
                let n = n as usize;
                let value = buf.get(*at..*at + n).ok_or("truncated bulk")?.to_vec();
                *at += n + 2;
                Reply::Bulk(value)
            }
        },
        b'*' => match number()? {
            n if n < 0 => Reply::Null,
            n => (0..n)
                .map(|_| parse(buf, at))
                .collect::<Result<Vec<_>, _>>()
                .map(Reply::Array)?,
        },
        other => return Err(format!("unexpected reply type {:?}", other as char)),
    })
}

async fn call(connection: &mut Connection, args: &[&[u8]]) -> Result<Reply, String> {
    let mut request = BytesMut::new();
    put_array_header(&mut request, args.len());
    for a in args {
        put_bulk(&mut request, a);
    }
    connection.send(&request).await?;
    let raw = connection.read_raw().await?;
    let reply = parse(&raw, &mut 0)?;
    match reply {
        Reply::Error(e) => Err(format!("consumer: {e}")),
        r => Ok(r),
    }
}

/// Counts an item popped before the run ended (items drained after it are not counted).
fn record(stats: &mut Stats, stop: &AtomicBool, value: &[u8]) {
    if stop.load(Ordering::Relaxed) {
        return;
    }
    if let Some(sent) = std::str::from_utf8(value)
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
    {
        stats.record_latency(now_ns().saturating_sub(sent));
    }
    stats.ops += 1;
    stats.items += 1;
}

pub struct Consumers {
    tasks: Vec<JoinHandle<Result<Stats, String>>>,
    stop: Arc<AtomicBool>,
}

impl Consumers {
    /// Opens `count` consumers (creating the stream group first); they run until `finish`.
    pub async fn start(host: &str, port: u16, count: usize, queue: &Queue) -> Result<Self, String> {
        if let Queue::Stream { key, group } = queue {
            let mut setup = Connection::open(host, port).await?;
            call(
                &mut setup,
                &[
                    b"XGROUP",
                    b"CREATE",
                    key.as_bytes(),
                    group.as_bytes(),
                    b"$",
                    b"MKSTREAM",
                ],
            )
            .await?;
        }
        let stop = Arc::new(AtomicBool::new(false));
        let mut tasks = Vec::with_capacity(count);
        for n in 0..count {
            let mut connection = Connection::open(host, port).await?;
            let (queue, stop) = (queue.clone(), Arc::clone(&stop));
            tasks.push(tokio::spawn(async move {
                let mut stats = Stats::new();
                let name = format!("c{n}");
                while !stop.load(Ordering::Relaxed) {
                    match &queue {
                        Queue::List { key } => {
                            if let Reply::Array(items) =
                                call(&mut connection, &[b"BLPOP", key.as_bytes(), b"1"]).await?
                            {
                                if let Some(Reply::Bulk(v)) = items.get(1) {
                                    record(&mut stats, &stop, v);
                                }
                            }
                        }
                        Queue::Stream { key, group } => {
                            let read = call(
                                &mut connection,
                                &[
                                    b"XREADGROUP",
                                    b"GROUP",
                                    group.as_bytes(),
                                    name.as_bytes(),
                                    b"COUNT",
                                    b"16",
                                    b"BLOCK",
                                    b"1000",
                                    b"STREAMS",
                                    key.as_bytes(),
                                    b">",
                                ],
                            )
                            .await?;
                            let mut ids: Vec<Vec<u8>> = Vec::new();
                            let mut values: Vec<Vec<u8>> = Vec::new();
                            if let Reply::Array(streams) = read {
                                for s in streams {
                                    let Reply::Array(mut pair) = s else { continue };
                                    let Some(Reply::Array(entries)) = pair.pop() else {
                                        continue;
                                    };
                                    for e in entries {
                                        let Reply::Array(mut e) = e else { continue };
                                        let fields = e.pop();
                                        if let (Some(Reply::Bulk(id)), Some(Reply::Array(f))) =
                                            (e.pop(), fields)
                                        {
                                            ids.push(id);
                                            if let Some(Reply::Bulk(v)) = f.into_iter().nth(1) {
                                                values.push(v);
                                            }
                                        }
                                    }
                                }
                            }
                            if !ids.is_empty() {
                                let mut args: Vec<&[u8]> =
                                    vec![b"XACK", key.as_bytes(), group.as_bytes()];
                                args.extend(ids.iter().map(|i| &i[..]));
                                call(&mut connection, &args).await?;
                                for v in &values {
                                    record(&mut stats, &stop, v);
                                }
                            }
                        }
                    }
                }
                Ok(stats)
            }));
        }
        Ok(Consumers { tasks, stop })
    }

    /// Stops the consumers (each ends after its current blocking call) and merges their stats.
    pub async fn finish(self) -> Result<Stats, String> {
        self.stop.store(true, Ordering::Relaxed);
        let mut total = Stats::new();
        for task in self.tasks {
            total.merge(&task.await.map_err(|e| format!("consumer task: {e}"))??);
        }
        Ok(total)
    }
}
