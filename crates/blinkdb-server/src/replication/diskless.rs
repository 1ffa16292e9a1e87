//! The diskless full sync (`repl-diskless-sync yes`), as Redis 7.0: the
//! snapshot's RDB goes straight to the replicas' sockets, framed as
//! `$EOF:<40 random chars>\r\n` <RDB> `<the same 40 chars>`. Replicas that
//! ask for a full sync wait up to `repl-diskless-sync-delay` seconds (or
//! until `repl-diskless-sync-max-replicas` are waiting) so that one snapshot
//! serves them all; one that arrives once the transfer began waits for the
//! next snapshot. The snapshot is the same fork-less one as a file's
//! (`Engine::save_rdb_paced`), written by a thread into a `Fanout` sink that
//! hands each chunk (one copy, shared) to every replica's connection task
//! through a channel. The sink never blocks: it is written while a shard is
//! locked. Between shards the snapshot waits while the slowest replica is
//! more than `LAG` bytes behind, so the slowest replica paces the snapshot
//! (as Redis's pipe to its child does) and the queue stays bounded. A replica
//! that goes away is dropped from the fan-out without stopping the others
//! (with none left the snapshot is abandoned).

use crate::server::state::Shared;
use bytes::Bytes;
use parking_lot::Mutex;
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};

/// What a replica's connection task receives from the snapshot thread.
pub enum Msg {
    /// The next RDB bytes.
    Data(Bytes),
    /// The RDB is complete (Ok) or the snapshot failed.
    End(Result<(), String>),
}

/// The start of a snapshot, sent to each replica at its point in time.
pub struct Start {
    /// `+FULLRESYNC`'s offset: the stream resumes at offset + 1.
    pub offset: u64,
    /// The EOF mark, shared by every replica of this snapshot.
    pub mark: String,
    pub data: mpsc::UnboundedReceiver<Msg>,
    /// RDB bytes this replica's task has written to its socket (it adds to
    /// it): the snapshot's pace.
    pub sent: Arc<AtomicU64>,
}

struct Waiter {
    id: u64,
    since_ms: u64,
    start: oneshot::Sender<Start>,
}

#[derive(Default)]
struct Inner {
    /// Replicas waiting for the next snapshot (Redis's wait_bgsave_start).
    waiting: Vec<Waiter>,
    /// A snapshot is being streamed.
    running: bool,
}

/// The diskless sync's scheduler, one per server.
#[derive(Default)]
pub struct Diskless {
    inner: Mutex<Inner>,
}

/// Chunks of the RDB handed to the connection tasks.
const CHUNK: usize = 256 * 1024;
/// How far (bytes) the slowest replica may be behind the snapshot before
/// the snapshot waits for it (between shards).
const LAG: u64 = 8 << 20;

impl Diskless {
    /// Queues replica `id` for the next snapshot; the receiver gets its start.
    pub fn enqueue(&self, shared: &Arc<Shared>, id: u64) -> oneshot::Receiver<Start> {
        let (tx, rx) = oneshot::channel();
        {
            let mut inner = self.inner.lock();
            if inner.running {
                tracing::info!(
                    "Current BGSAVE has socket target. Waiting for next BGSAVE for SYNC"
                );
            } else if shared.settings().repl_diskless_sync_delay > 0 {
                tracing::info!("Delay next BGSAVE for diskless SYNC");
            }
            inner.waiting.push(Waiter {
                id,
                since_ms: blinkdb_engine::now_ms(),
                start: tx,
            });
        }
        self.maybe_start(shared);
        rx
    }

    /// Starts a snapshot for the waiting replicas when none is running and
    /// the oldest has waited the delay, or enough are waiting (Redis's
    /// shouldStartChildForReplication). Called on arrival, by the waiting
    /// replicas' tasks as they tick, and when a snapshot ends.
    pub fn maybe_start(&self, shared: &Arc<Shared>) {
        let mut inner = self.inner.lock();
        inner.waiting.retain(|w| !w.start.is_closed());
        if inner.running || inner.waiting.is_empty() {
            return;
        }
        let settings = shared.settings();
        let now = blinkdb_engine::now_ms();
        let oldest = inner
            .waiting
            .iter()
            .map(|w| w.since_ms)
            .min()
            .unwrap_or(now);
        let max = settings.repl_diskless_sync_max_replicas;
        let due = now.saturating_sub(oldest) >= settings.repl_diskless_sync_delay * 1000
            || (max > 0 && inner.waiting.len() >= max);
        if !due {
            return;
        }
        let group = std::mem::take(&mut inner.waiting);
        inner.running = true;
        drop(inner);
        let s = shared.clone();
        let spawned = std::thread::Builder::new()
            .name("repl-diskless".into())
            .spawn(move || {
                snapshot(&s, group);
                s.replication.diskless.inner.lock().running = false;
                s.replication.diskless.maybe_start(&s);
            });
        if spawned.is_err() {
            tracing::warn!("Can't start the diskless replication thread");
            self.inner.lock().running = false;
        }
    }
}

/// One snapshot streamed to `group`.
fn snapshot(shared: &Arc<Shared>, group: Vec<Waiter>) {
    let mark = super::backlog::random_replid();
    let mut lanes = Vec::with_capacity(group.len());
    let mut starts = Vec::with_capacity(group.len());
    for w in group {
        let (tx, rx) = mpsc::unbounded_channel();
        let sent = Arc::new(AtomicU64::new(0));
        lanes.push(Lane {
            tx,
            sent: sent.clone(),
        });
        starts.push((w.id, w.start, rx, sent));
    }
    let out = Arc::new(Mutex::new(lanes));
    let produced = Arc::new(AtomicU64::new(0));
    let fanout = Fanout {
        out: out.clone(),
        produced: produced.clone(),
        buf: Vec::with_capacity(CHUNK),
    };
    tracing::info!(
        "Starting BGSAVE for SYNC with target: replicas sockets ({} replicas)",
        starts.len()
    );
    let pace = || loop {
        let behind = {
            let mut lanes = out.lock();
            lanes.retain(|l| !l.tx.is_closed());
            let slowest = lanes.iter().map(|l| l.sent.load(Ordering::Relaxed)).min();
            match slowest {
                Some(sent) => produced.load(Ordering::Relaxed).saturating_sub(sent),
                None => 0,
            }
        };
        if behind <= LAG {
            return;
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    let result = crate::persistence::rdb_file::start_sync_sink(&**shared, Box::new(fanout))
        .and_then(|w| {
            shared.engine.save_rdb_paced(
                w,
                || shared.exec.gate.exclusive(),
                |gate| {
                    for (id, start, data, sent) in std::mem::take(&mut starts) {
                        let offset = shared.replication.feed.start_full(id);
                        let _ = start.send(Start {
                            offset,
                            mark: mark.clone(),
                            data,
                            sent,
                        });
                    }
                    drop(gate);
                },
                &pace,
            )
        });
    let end = match result {
        Ok(_) => {
            tracing::info!("Diskless RDB transfer done");
            Ok(())
        }
        Err(e) => {
            tracing::warn!("Diskless replication snapshot failed: {e}");
            Err(e)
        }
    };
    for lane in out.lock().drain(..) {
        let _ = lane.tx.send(Msg::End(end.clone()));
    }
}

/// One replica's share of the fan-out.
struct Lane {
    tx: mpsc::UnboundedSender<Msg>,
    sent: Arc<AtomicU64>,
}

/// The snapshot's sink: buffers the RDB and hands each full chunk to every
/// replica still there, never blocking; fails once none is left.
struct Fanout {
    out: Arc<Mutex<Vec<Lane>>>,
    produced: Arc<AtomicU64>,
    buf: Vec<u8>,
}

impl Fanout {
    fn ship(&mut self) -> std::io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let chunk = Bytes::from(std::mem::replace(&mut self.buf, Vec::with_capacity(CHUNK)));
        self.produced
            .fetch_add(chunk.len() as u64, Ordering::Relaxed);
        let mut out = self.out.lock();
        out.retain(|l| l.tx.send(Msg::Data(chunk.clone())).is_ok());
        if out.is_empty() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::BrokenPipe,
                "no replica left for the diskless sync",
            ));
        }
        Ok(())
    }
}

impl Write for Fanout {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(bytes);
        if self.buf.len() >= CHUNK {
            self.ship()?;
        }
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.ship()
    }
}
