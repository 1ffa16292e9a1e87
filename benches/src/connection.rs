//! One client connection: send a batch of `pipeline` operations, read every reply, repeat.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use bytes::{Buf, BytesMut};
use redis_protocol::resp2::decode::decode_range;
use redis_protocol::resp2::types::RangeFrame;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::stats::Stats;
use crate::workload::{Op, OpKind};

/// Shared stop condition: operations left to hand out, or a deadline.
#[derive(Debug)]
pub enum Budget {
    Requests(AtomicU64),
    Until(Instant),
}

impl Budget {
    /// Claims up to `want` operations; 0 means the run is over.
    pub fn claim(&self, want: usize) -> usize {
        match self {
            Budget::Requests(left) => {
                let want = want as u64;
                let mut current = left.load(Ordering::Relaxed);
                loop {
                    let take = current.min(want);
                    if take == 0 {
                        return 0;
                    }
                    match left.compare_exchange_weak(
                        current,
                        current - take,
                        Ordering::Relaxed,
                        Ordering::Relaxed,
                    ) {
                        Ok(_) => return take as usize,
                        Err(seen) => current = seen,
                    }
                }
            }
            Budget::Until(deadline) => {
                if Instant::now() < *deadline {
                    want
                } else {
                    0
                }
            }
        }
    }
}

/// The kind of reply, without copying its payload.
#[derive(Debug, PartialEq, Eq)]
pub enum ReplyKind {
    Value,
    Null,
    Error(String),
}

/// A RESP connection that reads replies into one reusable buffer.
pub struct Connection {
    stream: TcpStream,
    inbound: BytesMut,
}

impl Connection {
    pub async fn open(host: &str, port: u16) -> Result<Connection, String> {
        let stream = TcpStream::connect((host, port))
            .await
            .map_err(|e| format!("connect {host}:{port}: {e}"))?;
        stream
            .set_nodelay(true)
            .map_err(|e| format!("set TCP_NODELAY: {e}"))?;
        Ok(Connection {
            stream,
            inbound: BytesMut::with_capacity(64 * 1024),
        })
    }

    pub async fn send(&mut self, bytes: &[u8]) -> Result<(), String> {
        self.stream
            .write_all(bytes)
            .await
            .map_err(|e| format!("write: {e}"))
    }

    pub async fn read_reply(&mut self) -> Result<ReplyKind, String> {
        loop {
            let decoded =
                decode_range(&self.inbound).map_err(|e| format!("bad reply from server: {e:?}"))?;
            if let Some((frame, used)) = decoded {
                let kind = match frame {
                    RangeFrame::Error((start, end)) => ReplyKind::Error(
                        String::from_utf8_lossy(&self.inbound[start..end]).into_owned(),
                    ),
                    RangeFrame::Null => ReplyKind::Null,
                    _ => ReplyKind::Value,
                };
                self.inbound.advance(used);
                return Ok(kind);
            }
            self.inbound.reserve(64 * 1024);
            let read = self
                .stream
                .read_buf(&mut self.inbound)
                .await
                .map_err(|e| format!("read: {e}"))?;
            if read == 0 {
                return Err("server closed the connection".into());
            }
        }
    }
}

/// Drives one connection until the budget runs out.
pub async fn run_client(
    mut connection: Connection,
    mut next_op: impl FnMut(&mut BytesMut) -> Op,
    pipeline: usize,
    budget: Arc<Budget>,
) -> Result<Stats, String> {
    let mut stats = Stats::new();
    let mut outbound = BytesMut::with_capacity(16 * 1024);
    let mut ops = Vec::with_capacity(pipeline);
    loop {
        let batch = budget.claim(pipeline);
        if batch == 0 {
            return Ok(stats);
        }
        outbound.clear();
        ops.clear();
        for _ in 0..batch {
            ops.push(next_op(&mut outbound));
        }
        let sent_at = Instant::now();
        connection.send(&outbound).await?;
        for op in &ops {
            let mut last = ReplyKind::Value;
            for _ in 0..op.commands {
                last = connection.read_reply().await?;
                if let ReplyKind::Error(text) = &last {
                    stats.record_error(text.as_bytes());
                }
            }
            stats.record_latency(sent_at.elapsed().as_nanos() as u64);
            stats.ops += 1;
            stats.items += op.items as u64;
            if op.kind == OpKind::Get {
                match last {
                    ReplyKind::Value => stats.hits += 1,
                    ReplyKind::Null => stats.misses += 1,
                    ReplyKind::Error(_) => {}
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_budget_hands_out_exactly_the_total() {
        let budget = Budget::Requests(AtomicU64::new(10));
        let claimed: Vec<usize> = (0..5).map(|_| budget.claim(4)).collect();
        assert_eq!(claimed, vec![4, 4, 2, 0, 0]);
    }

    #[tokio::test]
    async fn replies_are_classified_across_partial_reads() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            let reply = b"$5\r\nhello\r\n$-1\r\n-ERR unknown command 'BF.ADD'\r\n:1\r\n";
            for chunk in reply.chunks(3) {
                socket.write_all(chunk).await.unwrap();
                socket.flush().await.unwrap();
            }
        });
        let mut connection = Connection::open("127.0.0.1", port).await.unwrap();
        assert_eq!(connection.read_reply().await.unwrap(), ReplyKind::Value);
        assert_eq!(connection.read_reply().await.unwrap(), ReplyKind::Null);
        assert_eq!(
            connection.read_reply().await.unwrap(),
            ReplyKind::Error("ERR unknown command 'BF.ADD'".into())
        );
        assert_eq!(connection.read_reply().await.unwrap(), ReplyKind::Value);
        assert!(connection.read_reply().await.is_err());
        server.await.unwrap();
    }
}
