//! A connection's replies that its socket has not taken yet (Redis's client
//! reply list). The connection keeps reading and running commands while they
//! wait, so a client that sends a whole pipeline before it reads (redis-py's
//! `pipeline().execute()`) never waits on the server as the server waits on it.
//! The queue is bounded by `client-output-buffer-limit` and `maxmemory-clients`
//! (`connection.rs`, `client_eviction.rs`), and holds nothing once drained.
//!
//! Large values stay references into the log until they are near the head of
//! the queue: at most `READ_AHEAD_BYTES` of them (or one, if larger) are read
//! into memory ahead of the socket, however long the queue.

use crate::client::ClientInfo;
use crate::net::socket::Socket;
use crate::protocol::{push_error_line, Out};
use blinkdb_engine::{blob_read_error, BlobSource};
use bytes::{Buf, Bytes, BytesMut};
use std::collections::VecDeque;
use std::future::Future;
use std::io::{self, IoSlice};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

/// A value at least this long that is not all in the page cache is read on the
/// connection thread's blocking pool (`io_threads.rs`), so the thread serves other
/// clients while the disk works. A cached one is read inline: handing it to another
/// core cost the server ~20% more CPU per 256 KB GET (measured), because the socket
/// copy then reads it from the other core's cache. Shorter values are always read inline.
const BLOCKING_READ_MIN: u64 = 64 * 1024;

/// Bytes of large values a connection reads ahead of the socket. A pipeline of GETs
/// of large values holds at most this much (or one value, if larger) in memory,
/// however many GETs it has: the values live on disk and may add up to more than RAM.
const READ_AHEAD_BYTES: u64 = 32 << 20;

/// Chunks one vectored write takes at most.
const WRITE_SLICES: usize = 64;

/// Redis's PROTO_REPLY_CHUNK_BYTES: the block small replies are copied into.
const REPLY_BLOCK: usize = 16 * 1024;

/// Replies shorter than this are copied into the tail block rather than
/// queued as a chunk of their own. A client that sends one command at a
/// time and reads none of the replies made one chunk per reply: ~170 bytes
/// each (the queue's slot, the buffer's allocation and shared header) beside
/// a 9-byte reply, memory its `omem` did not show (maxmemory.tcl's "slave
/// buffer are counted correctly" saw 8 MB unaccounted). Longer ones stay
/// zero-copy: their overhead is a few percent at most.
const COPY_BELOW: usize = REPLY_BLOCK / 4;

/// A large value's read, started: done inline, or running on the blocking pool.
enum Read {
    Now(blinkdb_engine::AofResult<Vec<u8>>),
    Later(tokio::task::JoinHandle<blinkdb_engine::AofResult<Vec<u8>>>),
}

impl Read {
    fn start(src: BlobSource) -> Read {
        if src.len() < BLOCKING_READ_MIN {
            Read::Now(src.read())
        } else if let Some(cached) = src.read_cached() {
            Read::Now(cached)
        } else {
            Read::Later(tokio::task::spawn_blocking(move || src.read()))
        }
    }

    /// The value, or the error reply's text, once read.
    fn poll_value(&mut self, cx: &mut Context<'_>) -> Poll<Result<Vec<u8>, String>> {
        let read = match self {
            Read::Now(r) => std::mem::replace(r, Ok(Vec::new())),
            Read::Later(task) => match Pin::new(task).poll(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Ok(r)) => r,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(blob_read_error(&e))),
            },
        };
        Poll::Ready(read.map_err(|e| blob_read_error(&e)))
    }
}

enum Chunk {
    /// Bytes to write; `messages` of them were taken from the client's inbox
    /// (they count against its Pub/Sub limit until written: `Mailbox::written`);
    /// `slack`: the rest of the buffer they were gathered in, allocated as long
    /// as they wait.
    Bytes {
        data: Bytes,
        messages: usize,
        slack: usize,
    },
    /// Small replies copied together (see `COPY_BELOW`); `slack`: its
    /// room not filled yet.
    Block {
        data: BytesMut,
        messages: usize,
        slack: usize,
    },
    /// A large value's whole bulk reply, not read yet.
    File(BlobSource),
    /// A large value's read, started (`len`: the value's length).
    Reading { len: u64, read: Read },
}

impl Chunk {
    /// The bytes of a chunk the socket takes (None: a large value not read
    /// yet), with the messages and the room that go when they are written.
    fn bytes(&mut self) -> Option<(&mut dyn Buf, usize, usize)> {
        match self {
            Chunk::Bytes {
                data,
                messages,
                slack,
            } => Some((data, *messages, *slack)),
            Chunk::Block {
                data,
                messages,
                slack,
            } => Some((data, *messages, *slack)),
            Chunk::File(_) | Chunk::Reading { .. } => None,
        }
    }
}

/// The unsent replies of one connection, oldest first.
pub struct OutputQueue {
    chunks: VecDeque<Chunk>,
    /// Bytes waiting (a large value counts its length): what the output
    /// limits compare.
    bytes: usize,
    /// The chunks' `slack`: with `bytes`, what the queue holds (`omem`,
    /// the client's memory), as Redis counts its reply blocks' allocations.
    slack: usize,
    /// Large-value bytes read or being read ahead of the socket.
    ahead: u64,
    /// Large values not read yet (most queues have none: no scan for them).
    unread: usize,
    info: Arc<ClientInfo>,
}

impl OutputQueue {
    pub fn new(info: Arc<ClientInfo>) -> Self {
        OutputQueue {
            chunks: VecDeque::new(),
            bytes: 0,
            slack: 0,
            ahead: 0,
            unread: 0,
            info,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.chunks.is_empty()
    }

    /// Bytes waiting for the socket.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Queues bytes, of which `messages` came from the inbox.
    pub fn push_bytes(&mut self, data: Bytes, messages: usize) {
        self.push_chunk(data, messages, 0);
    }

    /// Queues what the socket did not take of a reply buffer that allocated
    /// `allocated` bytes (all of it stays allocated until the rest is written).
    pub fn push_buffer(&mut self, rest: BytesMut, allocated: usize, messages: usize) {
        let slack = allocated.saturating_sub(rest.len());
        self.push_chunk(rest.freeze(), messages, slack);
    }

    fn push_chunk(&mut self, data: Bytes, messages: usize, slack: usize) {
        self.push_part(data, messages, slack, true);
    }

    /// `may_copy`: whether `data` is the only reference to its buffer (a
    /// copy frees it, its slack with it).
    fn push_part(&mut self, data: Bytes, messages: usize, slack: usize, may_copy: bool) {
        if data.is_empty() {
            self.inbox_written(messages);
            return;
        }
        if may_copy && data.len() < COPY_BELOW {
            self.copy_to_block(&data, messages);
            self.publish();
            return;
        }
        // A larger buffer with much room is copied out rather than kept
        // whole, so what waits costs at most a quarter more than its bytes.
        // Only the socket's refusal brings a batch here, and the copy is at
        // most its bytes.
        let (data, slack) = if may_copy && slack > data.len() / 4 {
            (Bytes::copy_from_slice(&data), 0)
        } else {
            (data, slack)
        };
        self.bytes += data.len();
        self.slack += slack;
        self.chunks.push_back(Chunk::Bytes {
            data,
            messages,
            slack,
        });
        self.publish();
    }

    /// Appends to the tail block, or to a new one if it has no room.
    fn copy_to_block(&mut self, data: &[u8], messages: usize) {
        self.bytes += data.len();
        if let Some(Chunk::Block {
            data: block,
            messages: m,
            slack,
        }) = self.chunks.back_mut()
        {
            if *slack >= data.len() {
                block.extend_from_slice(data);
                *m += messages;
                *slack -= data.len();
                self.slack -= data.len();
                return;
            }
        }
        // Sized to what waits, up to 16 KB: a client with a few replies
        // waiting (a tracking client's invalidations) holds no 16 KB block,
        // whose size would count against maxmemory and evict more keys.
        let size = self.bytes.next_power_of_two().clamp(256, REPLY_BLOCK);
        let mut block = BytesMut::with_capacity(size);
        block.extend_from_slice(data);
        let slack = block.capacity() - data.len();
        self.slack += slack;
        self.chunks.push_back(Chunk::Block {
            data: block,
            messages,
            slack,
        });
    }

    /// Queues a batch's replies, with their large values in place, and leaves
    /// `out` empty. `messages` of its bytes came from the inbox.
    pub fn push_out(&mut self, out: &mut Out, messages: usize) {
        let allocated = out.buf.capacity();
        let buf = std::mem::take(&mut out.buf).freeze();
        let whole = buf.len();
        let mut at = 0;
        let mut messages = Some(messages);
        for (pos, src) in std::mem::take(&mut out.files) {
            if pos > at {
                let part = buf.slice(at..pos);
                self.bytes += part.len();
                self.chunks.push_back(Chunk::Bytes {
                    data: part,
                    messages: messages.take().unwrap_or(0),
                    slack: 0,
                });
            }
            self.bytes += src.len() as usize;
            self.unread += 1;
            self.chunks.push_back(Chunk::File(src));
            at = pos;
        }
        let rest = buf.slice(at..);
        let messages = messages.unwrap_or(0);
        // The buffer's slack goes with its last part, freed with it.
        let alone = at == 0;
        self.push_part(rest, messages, allocated.saturating_sub(whole), alone);
        out.pushed_to = 0;
        self.publish();
    }

    /// Writes what the socket takes. Ready(Ok) once the queue is empty; Pending
    /// while the socket is full or a large value is being read (the task is
    /// woken when either changes); Ready(Err) if the socket failed.
    pub fn poll_drain<S: Socket>(
        &mut self,
        sock: &mut S,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<()>> {
        let result = self.drain(sock, cx);
        self.publish();
        result
    }

    /// Writes what the socket takes now, without waiting; Err if it failed.
    pub fn drain_now<S: Socket>(&mut self, sock: &mut S) -> io::Result<()> {
        let mut cx = Context::from_waker(Waker::noop());
        match self.poll_drain(sock, &mut cx) {
            Poll::Ready(Err(e)) => Err(e),
            _ => Ok(()),
        }
    }

    fn drain<S: Socket>(&mut self, sock: &mut S, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        loop {
            self.start_reads();
            match self.chunks.front_mut() {
                None => return Poll::Ready(Ok(())),
                Some(Chunk::Reading { len, read }) => {
                    let len = *len;
                    let value = std::task::ready!(read.poll_value(cx));
                    self.chunks.pop_front();
                    self.ahead -= len;
                    self.bytes -= len as usize;
                    let parts: Vec<Bytes> = match value {
                        Ok(value) => vec![
                            Bytes::from(format!("${}\r\n", value.len())),
                            Bytes::from(value),
                            Bytes::from_static(b"\r\n"),
                        ],
                        Err(e) => {
                            let mut line = Vec::with_capacity(e.len() + 3);
                            push_error_line(&mut line, e.as_bytes());
                            vec![Bytes::from(line)]
                        }
                    };
                    for data in parts.into_iter().rev() {
                        self.bytes += data.len();
                        self.chunks.push_front(Chunk::Bytes {
                            data,
                            messages: 0,
                            slack: 0,
                        });
                    }
                }
                Some(Chunk::File(_)) => unreachable!("start_reads starts the head's read"),
                Some(Chunk::Bytes { .. } | Chunk::Block { .. }) => {}
            }
            let mut slices = [IoSlice::new(&[]); WRITE_SLICES];
            let mut n = 0;
            for chunk in self.chunks.iter().take(WRITE_SLICES) {
                slices[n] = match chunk {
                    Chunk::Bytes { data, .. } => IoSlice::new(data),
                    Chunk::Block { data, .. } => IoSlice::new(data),
                    _ => break,
                };
                n += 1;
            }
            let written = match Pin::new(&mut *sock).poll_write_vectored(cx, &slices[..n]) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Ready(Ok(0)) => return Poll::Ready(Err(io::ErrorKind::WriteZero.into())),
                Poll::Ready(Ok(written)) => written,
            };
            self.consume(written);
        }
    }

    /// Drops `n` written bytes from the head.
    fn consume(&mut self, mut n: usize) {
        self.bytes -= n;
        while n > 0 {
            let Some((data, messages, slack)) = self.chunks.front_mut().and_then(Chunk::bytes)
            else {
                unreachable!("only byte chunks are written")
            };
            let len = data.remaining();
            if n < len {
                data.advance(n);
                return;
            }
            n -= len;
            self.slack -= slack;
            self.chunks.pop_front();
            self.inbox_written(messages);
        }
    }

    /// Starts the reads of the large values near the head: the first one
    /// always, the next ones while they fit in `READ_AHEAD_BYTES`.
    fn start_reads(&mut self) {
        if self.unread == 0 {
            return;
        }
        for chunk in self.chunks.iter_mut() {
            let Chunk::File(src) = chunk else {
                continue;
            };
            let len = src.len();
            if self.ahead > 0 && self.ahead + len > READ_AHEAD_BYTES {
                return;
            }
            let placeholder = Chunk::Bytes {
                data: Bytes::new(),
                messages: 0,
                slack: 0,
            };
            let Chunk::File(src) = std::mem::replace(chunk, placeholder) else {
                unreachable!("matched above");
            };
            self.ahead += len;
            self.unread -= 1;
            *chunk = Chunk::Reading {
                len,
                read: Read::start(src),
            };
            if self.unread == 0 {
                return;
            }
        }
    }

    fn inbox_written(&self, messages: usize) {
        if messages > 0 {
            if let Some(inbox) = self.info.inbox_if_any() {
                inbox.written(messages);
            }
        }
    }

    /// What CLIENT LIST and the memory accounting show of it.
    fn publish(&self) {
        self.info
            .usage
            .set_reply_pending(self.bytes + self.slack, self.chunks.len());
    }
}

impl Drop for OutputQueue {
    fn drop(&mut self) {
        let messages = self
            .chunks
            .iter()
            .map(|c| match c {
                Chunk::Bytes { messages, .. } | Chunk::Block { messages, .. } => *messages,
                _ => 0,
            })
            .sum();
        self.inbox_written(messages);
        self.info.usage.set_reply_pending(0, 0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::Peer;
    use tokio::io::AsyncReadExt;
    use tokio::net::UnixStream;

    fn queue() -> OutputQueue {
        let info = ClientInfo::new(1, "test".into(), "test".into(), -1, Peer::Internal, 0);
        OutputQueue::new(Arc::new(info))
    }

    /// More than the socket holds: the queue keeps the rest, in order, and
    /// gives it to the socket as the peer reads.
    #[tokio::test]
    async fn keeps_what_the_socket_refuses_and_writes_it_in_order() {
        let (mut server, mut client) = UnixStream::pair().unwrap();
        let mut q = queue();
        let mut expected = Vec::new();
        for i in 0..64u8 {
            let chunk = vec![i; 64 * 1024];
            expected.extend_from_slice(&chunk);
            q.push_bytes(Bytes::from(chunk), 0);
        }
        q.drain_now(&mut server).unwrap();
        assert!(!q.is_empty(), "4 MB cannot fit a socket buffer");
        assert!(q.bytes() < expected.len());
        let reader = tokio::spawn(async move {
            let mut got = Vec::new();
            let mut buf = vec![0; 1 << 16];
            while got.len() < 64 * 64 * 1024 {
                let n = client.read(&mut buf).await.unwrap();
                assert!(n > 0);
                got.extend_from_slice(&buf[..n]);
            }
            got
        });
        std::future::poll_fn(|cx| q.poll_drain(&mut server, cx))
            .await
            .unwrap();
        assert!(q.is_empty());
        assert_eq!(q.bytes(), 0);
        assert_eq!(reader.await.unwrap(), expected);
        assert_eq!(q.info.output_pending(), 0);
    }

    /// Small replies share 16 KB blocks, and what the queue reports is
    /// those blocks; all of it is written, in order.
    #[tokio::test]
    async fn small_replies_share_blocks() {
        let (mut server, mut client) = UnixStream::pair().unwrap();
        let mut q = queue();
        let mut expected = Vec::new();
        for i in 0..100_000u32 {
            let reply = format!(":{i}\r\n");
            expected.extend_from_slice(reply.as_bytes());
            q.push_bytes(Bytes::from(reply), 0);
        }
        assert!(q.chunks.len() <= expected.len() / REPLY_BLOCK + 8);
        let held = q.info.output_pending() as usize;
        assert!(held >= expected.len() && held < expected.len() + REPLY_BLOCK);
        let reader = tokio::spawn(async move {
            let mut got = Vec::new();
            let mut buf = vec![0; 1 << 16];
            while got.len() < expected.len() {
                let n = client.read(&mut buf).await.unwrap();
                assert!(n > 0);
                got.extend_from_slice(&buf[..n]);
            }
            assert_eq!(got, expected);
        });
        std::future::poll_fn(|cx| q.poll_drain(&mut server, cx))
            .await
            .unwrap();
        reader.await.unwrap();
        assert_eq!((q.bytes(), q.slack, q.info.output_pending()), (0, 0, 0));
    }

    #[tokio::test]
    async fn a_closed_peer_fails_the_drain() {
        let (mut server, client) = UnixStream::pair().unwrap();
        drop(client);
        let mut q = queue();
        q.push_bytes(Bytes::from_static(b"+OK\r\n"), 0);
        assert!(q.drain_now(&mut server).is_err());
    }
}
