//! One client connection: send a batch of `pipeline` operations, read every reply, repeat.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use bytes::{Buf, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::pace::Pace;
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

    /// The bytes of the next whole reply.
    pub async fn read_raw(&mut self) -> Result<Vec<u8>, String> {
        let (_, used) = self.next_reply().await?;
        Ok(self.inbound.split_to(used).to_vec())
    }

    pub async fn read_reply(&mut self) -> Result<ReplyKind, String> {
        let (kind, used) = self.next_reply().await?;
        self.inbound.advance(used);
        Ok(kind)
    }

    /// Reads until the buffer starts with a whole reply: its kind and length.
    async fn next_reply(&mut self) -> Result<(ReplyKind, usize), String> {
        loop {
            if let Some(found) = classify_reply(&self.inbound)? {
                return Ok(found);
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

/// Replies nested deeper than this are refused (the servers never send them).
const MAX_DEPTH: usize = 32;

/// The kind and length of the first whole RESP2 reply in `buf`, or None if it
/// is incomplete. Hand-written because the load generator only classifies and
/// skips replies: redis-protocol's decoder builds a frame per array element,
/// which took an eighth of the generator's time on 128-item replies.
pub fn classify_reply(buf: &[u8]) -> Result<Option<(ReplyKind, usize)>, String> {
    let mut at = 0;
    let mut kind = None;
    // Elements still to skip at each open array level.
    let mut pending: Vec<i64> = Vec::new();
    loop {
        let Some(line_end) = find_crlf(buf, at) else {
            return Ok(None);
        };
        if line_end == at {
            return Err("bad reply from server: empty line".into());
        }
        let tag = buf[at];
        let line = &buf[at + 1..line_end];
        at = line_end + 2;
        let this = match tag {
            b'+' | b':' => ReplyKind::Value,
            b'-' => ReplyKind::Error(String::from_utf8_lossy(line).into_owned()),
            b'$' => match parse_len(line)? {
                -1 => ReplyKind::Null,
                n => {
                    let end = at + n as usize + 2;
                    if buf.len() < end {
                        return Ok(None);
                    }
                    if &buf[end - 2..end] != b"\r\n" {
                        return Err("bad reply from server: bulk string without CRLF".into());
                    }
                    at = end;
                    ReplyKind::Value
                }
            },
            b'*' => match parse_len(line)? {
                -1 => ReplyKind::Null,
                0 => ReplyKind::Value,
                n => {
                    if pending.len() == MAX_DEPTH {
                        return Err("bad reply from server: arrays nested too deep".into());
                    }
                    kind.get_or_insert(ReplyKind::Value);
                    pending.push(n);
                    continue;
                }
            },
            other => {
                return Err(format!(
                    "bad reply from server: unexpected type byte {other:#04x}"
                ))
            }
        };
        kind.get_or_insert(this);
        // One element done: close every array it completes.
        loop {
            match pending.last_mut() {
                None => return Ok(kind.map(|k| (k, at))),
                Some(left) => {
                    *left -= 1;
                    if *left > 0 {
                        break;
                    }
                    pending.pop();
                }
            }
        }
    }
}

fn find_crlf(buf: &[u8], from: usize) -> Option<usize> {
    let mut at = from;
    loop {
        let cr = at + buf.get(at..)?.iter().position(|&b| b == b'\r')?;
        if buf.get(cr + 1) == Some(&b'\n') {
            return Some(cr);
        }
        if cr + 1 >= buf.len() {
            return None;
        }
        at = cr + 1;
    }
}

fn parse_len(line: &[u8]) -> Result<i64, String> {
    std::str::from_utf8(line)
        .ok()
        .and_then(|s| s.parse::<i64>().ok())
        .filter(|n| (-1..=512 * 1024 * 1024).contains(n))
        .ok_or_else(|| {
            format!(
                "bad reply from server: length {:?}",
                String::from_utf8_lossy(line)
            )
        })
}

/// Drives one connection until the budget runs out; with a `pace` (`--rate`),
/// each batch waits until its first operation is due.
pub async fn run_client(
    mut connection: Connection,
    mut next_op: impl FnMut(&mut BytesMut) -> Op,
    pipeline: usize,
    budget: Arc<Budget>,
    mut pace: Option<Pace>,
) -> Result<Stats, String> {
    let mut stats = Stats::new();
    let mut outbound = BytesMut::with_capacity(16 * 1024);
    let mut ops = Vec::with_capacity(pipeline);
    loop {
        if let Some(pace) = &pace {
            pace.wait().await;
        }
        let batch = budget.claim(pipeline);
        if batch == 0 {
            return Ok(stats);
        }
        if let Some(pace) = pace.as_mut() {
            pace.advance(batch);
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
    use std::time::Duration;

    #[test]
    fn request_budget_hands_out_exactly_the_total() {
        let budget = Budget::Requests(AtomicU64::new(10));
        let claimed: Vec<usize> = (0..5).map(|_| budget.claim(4)).collect();
        assert_eq!(claimed, vec![4, 4, 2, 0, 0]);
    }

    #[test]
    fn classification_matches_redis_protocol_on_every_prefix() {
        use redis_protocol::resp2::decode::decode_range;
        let replies: &[&[u8]] = &[
            b"+OK\r\n",
            b":-12\r\n",
            b"-WRONGTYPE Operation against a key\r\n",
            b"$-1\r\n",
            b"*-1\r\n",
            b"*0\r\n",
            b"$0\r\n\r\n",
            b"$5\r\nhe\r\no\r\n",
            b"*3\r\n:1\r\n:0\r\n:1\r\n",
            b"*2\r\n*2\r\n$1\r\na\r\n$-1\r\n*0\r\n",
            b"*2\r\n$1\r\n0\r\n*2\r\n$3\r\nfoo\r\n-ERR x\r\n",
        ];
        for reply in replies {
            let mut stream = reply.to_vec();
            stream.extend_from_slice(b"+next\r\n");
            let (frame, used) = decode_range(&stream).unwrap().unwrap();
            let (kind, ours) = classify_reply(&stream).unwrap().unwrap();
            assert_eq!(ours, used, "{:?}", String::from_utf8_lossy(reply));
            let expected = match frame {
                redis_protocol::resp2::types::RangeFrame::Error(_) => {
                    matches!(kind, ReplyKind::Error(_))
                }
                redis_protocol::resp2::types::RangeFrame::Null => kind == ReplyKind::Null,
                _ => kind == ReplyKind::Value,
            };
            assert!(
                expected,
                "{:?} classified {kind:?}",
                String::from_utf8_lossy(reply)
            );
            for cut in 0..reply.len() {
                assert_eq!(classify_reply(&reply[..cut]).unwrap(), None, "prefix {cut}");
            }
        }
        for bad in [
            &b"?x\r\n"[..],
            b"$abc\r\n",
            b"*-7\r\n",
            b"$3\r\nabcde\r\n",
            b"\r\n",
            b"*1\r\n\r\n",
        ] {
            assert!(
                classify_reply(bad).is_err(),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    /// A server that answers +OK to every `PING` it reads, on any number of connections.
    async fn ok_server() -> u16 {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            loop {
                let (mut socket, _) = listener.accept().await.unwrap();
                tokio::spawn(async move {
                    let mut buf = Vec::new();
                    let mut chunk = [0u8; 4096];
                    loop {
                        let n = match socket.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => n,
                        };
                        buf.extend_from_slice(&chunk[..n]);
                        let whole = buf.windows(4).filter(|w| w == b"PING").count();
                        buf.drain(..buf.len().saturating_sub(3));
                        for _ in 0..whole {
                            socket.write_all(b"+OK\r\n").await.unwrap();
                        }
                    }
                });
            }
        });
        port
    }

    #[tokio::test]
    async fn a_paced_client_keeps_to_its_share_of_the_rate() {
        let port = ok_server().await;
        let started = Instant::now();
        // 400 ops/s over 2 clients, 20 ops each at P2: a client's last batch is
        // due 18 ops * 5 ms = 90 ms in; unpaced, the run takes about a millisecond.
        let mut tasks = Vec::new();
        for id in 0..2 {
            let connection = Connection::open("127.0.0.1", port).await.unwrap();
            let pace = Pace::new(400.0, 2, id, started);
            let budget = Arc::new(Budget::Requests(AtomicU64::new(20)));
            tasks.push(tokio::spawn(run_client(
                connection,
                |buf: &mut BytesMut| {
                    buf.extend_from_slice(b"*1\r\n$4\r\nPING\r\n");
                    Op {
                        kind: OpKind::Other,
                        commands: 1,
                        items: 1,
                    }
                },
                2,
                budget,
                Some(pace),
            )));
        }
        let mut ops = 0;
        for task in tasks {
            ops += task.await.unwrap().unwrap().ops;
        }
        assert_eq!(ops, 40);
        let elapsed = started.elapsed();
        assert!(elapsed >= Duration::from_millis(90), "{elapsed:?}");
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
