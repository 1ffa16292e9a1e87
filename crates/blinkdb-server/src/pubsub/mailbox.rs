//! A client's inbox: the messages published to it (Pub/Sub messages, keyspace
//! events, tracking invalidations) that its connection has not written yet,
//! filled by publishers on any connection thread.
//!
//! Publishers append the encoded frame straight into one growing buffer (no
//! allocation per message once it has grown), and wake the connection only when
//! the buffer goes from empty to non-empty, so a burst of messages costs one wake
//! and leaves as one write. The connection takes the whole buffer by swapping it
//! with its own empty reply buffer.

use crate::client::ClientInfo;
use crate::config::limits::ClassLimit;
use bytes::BytesMut;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Weak};
use std::task::{Context, Poll};

pub struct Mailbox {
    inbox: Mutex<Inbox>,
    /// Only the client's own connection waits on it (`crate::client::signal`).
    wake: crate::client::signal::Signal,
    /// Weak: the client's info holds its inbox.
    info: Weak<ClientInfo>,
    /// The subscriber's RESP version: messages are `*` arrays in RESP2, `>` pushes in RESP3.
    proto: AtomicU8,
}

#[derive(Default)]
struct Inbox {
    buf: BytesMut,
    /// Bytes the connection took and is still writing to its socket: they count
    /// against the output buffer limit until the write completes.
    in_flight: usize,
    /// When the pending bytes first went over the soft limit (0: they are not over).
    soft_since_ms: u64,
    /// Over a limit: the client is being closed and takes no more messages.
    closed: bool,
}

impl Mailbox {
    pub fn new(info: Weak<ClientInfo>, proto: u8) -> Arc<Mailbox> {
        Arc::new(Mailbox {
            inbox: Mutex::new(Inbox::default()),
            wake: crate::client::signal::Signal::new(),
            info,
            proto: AtomicU8::new(proto),
        })
    }

    pub fn set_proto(&self, proto: u8) {
        self.proto.store(proto, Ordering::Relaxed);
    }

    /// Appends one message frame. `frame` is encoded as a RESP2 array (`*n...`);
    /// a RESP3 subscriber gets the same bytes with a push header (`>n...`).
    /// Over the pubsub class's limit the client is closed instead, as Redis
    /// does, and what it had pending is freed at once.
    pub fn deliver(&self, frame: &[u8], limit: &ClassLimit, now_ms: u64) {
        let push = self.proto.load(Ordering::Relaxed) == 3;
        self.append(limit, now_ms, |buf| {
            if push {
                buf.extend_from_slice(b">");
                buf.extend_from_slice(&frame[1..]);
            } else {
                buf.extend_from_slice(frame);
            }
        });
    }

    /// Appends bytes already encoded for this client (tracking's messages,
    /// whose shape depends on more than the protocol), under `limit`.
    pub fn deliver_raw(&self, parts: &[&[u8]], limit: &ClassLimit, now_ms: u64) {
        self.append(limit, now_ms, |buf| {
            for p in parts {
                buf.extend_from_slice(p);
            }
        });
    }

    fn append(&self, limit: &ClassLimit, now_ms: u64, write: impl FnOnce(&mut BytesMut)) {
        let mut inbox = self.inbox.lock();
        if inbox.closed {
            return;
        }
        let was_empty = inbox.buf.is_empty();
        write(&mut inbox.buf);
        if !limit.is_unlimited() {
            let pending = inbox.buf.len() + inbox.in_flight;
            let soft_since = &mut inbox.soft_since_ms;
            if limit.exceeded(pending, soft_since, now_ms) {
                inbox.closed = true;
                inbox.buf = BytesMut::new();
                drop(inbox);
                self.close_for_limit();
                return;
            }
        }
        drop(inbox);
        if was_empty {
            self.wake.notify_one();
        }
    }

    fn close_for_limit(&self) {
        let Some(info) = self.info.upgrade() else {
            return;
        };
        tracing::warn!(
            "Client {} scheduled to be closed ASAP for overcoming of output buffer limits.",
            info.describe(&blinkdb_engine::now_ms())
        );
        info.kill();
    }

    /// Ready when messages may be waiting (a wake-up is kept if none waits);
    /// otherwise the connection's task is woken by the next one.
    pub fn poll_ready(&self, cx: &mut Context<'_>) -> Poll<()> {
        self.wake.poll_raised(cx)
    }

    /// Moves the waiting messages to the end of `out` (swapping buffers when
    /// `out` is empty, so the common idle-subscriber case copies nothing);
    /// returns how many bytes moved. With `in_flight` they keep counting against
    /// the limit until passed to `written`.
    pub fn take_into(&self, out: &mut BytesMut, in_flight: bool) -> usize {
        let mut inbox = self.inbox.lock();
        let n = inbox.buf.len();
        if n == 0 {
            return 0;
        }
        if out.is_empty() {
            std::mem::swap(out, &mut inbox.buf);
        } else {
            out.extend_from_slice(&inbox.buf);
            inbox.buf.clear();
        }
        if in_flight {
            inbox.in_flight += n;
        }
        n
    }

    /// `n` bytes taken by `take_into` reached the socket.
    pub fn written(&self, n: usize) {
        if n > 0 {
            let mut inbox = self.inbox.lock();
            inbox.in_flight = inbox.in_flight.saturating_sub(n);
        }
    }

    /// Bytes waiting for the connection to take them (part of CLIENT LIST
    /// `omem`; those being written are counted with its replies).
    pub fn queued(&self) -> usize {
        self.inbox.lock().buf.len()
    }
}
