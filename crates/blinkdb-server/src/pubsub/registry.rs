//! Who listens to what, server-wide: channels, patterns and shard channels, each
//! mapped to its subscribers' mailboxes. PUBLISH takes a read lock and writes the
//! message into every subscriber's mailbox while holding it, so messages from one
//! publisher reach each subscriber in publish order.

use super::mailbox::Mailbox;
use crate::config::limits::ClassLimit;
use blinkdb_engine::glob_match;
use bytes::{BufMut, Bytes, BytesMut};
use hashbrown::HashMap;
use parking_lot::RwLock;
use std::cell::RefCell;
use std::sync::Arc;

type Subscribers = HashMap<Bytes, Vec<Arc<Mailbox>>>;

/// The three namespaces; shard channels ignore patterns, as in Redis.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kind {
    Channel,
    Pattern,
    Shard,
}

#[derive(Default)]
pub struct Registry {
    channels: RwLock<Subscribers>,
    patterns: RwLock<Subscribers>,
    shard: RwLock<Subscribers>,
}

thread_local! {
    /// The frame being published, encoded once per publish and copied into
    /// each mailbox (reused so a publish allocates nothing once warm).
    static FRAME: RefCell<BytesMut> = RefCell::new(BytesMut::with_capacity(256));
}

fn put_bulk(buf: &mut BytesMut, b: &[u8]) {
    let mut n = itoa::Buffer::new();
    buf.put_u8(b'$');
    buf.extend_from_slice(n.format(b.len()).as_bytes());
    buf.extend_from_slice(b"\r\n");
    buf.extend_from_slice(b);
    buf.extend_from_slice(b"\r\n");
}

/// `*<n>` then each part as a bulk string: the RESP2 form of a pubsub frame.
pub fn encode_frame(buf: &mut BytesMut, parts: &[&[u8]]) {
    buf.put_u8(b'*');
    buf.extend_from_slice(itoa::Buffer::new().format(parts.len()).as_bytes());
    buf.extend_from_slice(b"\r\n");
    for p in parts {
        put_bulk(buf, p);
    }
}

impl Registry {
    fn map(&self, kind: Kind) -> &RwLock<Subscribers> {
        match kind {
            Kind::Channel => &self.channels,
            Kind::Pattern => &self.patterns,
            Kind::Shard => &self.shard,
        }
    }

    pub fn add(&self, kind: Kind, name: &Bytes, mailbox: &Arc<Mailbox>) {
        self.map(kind)
            .write()
            .entry(name.clone())
            .or_default()
            .push(mailbox.clone());
    }

    /// Drops `mailbox` from `name`'s subscribers, and the entry once empty
    /// (so abandoned channels cost nothing).
    pub fn remove(&self, kind: Kind, name: &[u8], mailbox: &Arc<Mailbox>) {
        let mut map = self.map(kind).write();
        if let Some(list) = map.get_mut(name) {
            if let Some(i) = list.iter().position(|m| Arc::ptr_eq(m, mailbox)) {
                list.swap_remove(i);
            }
            if list.is_empty() {
                map.remove(name);
            }
        }
    }

    /// Sends `message` to `channel`'s subscribers (and, unless `shard`, to
    /// those of every matching pattern); returns how many received it.
    pub fn publish(
        &self,
        channel: &[u8],
        message: &[u8],
        shard: bool,
        limit: &ClassLimit,
        now_ms: u64,
    ) -> usize {
        FRAME.with(|frame| {
            let mut frame = frame.borrow_mut();
            let mut receivers = 0;
            let kind = if shard { Kind::Shard } else { Kind::Channel };
            {
                let map = self.map(kind).read();
                if let Some(list) = map.get(channel) {
                    frame.clear();
                    let head: &[u8] = if shard { b"smessage" } else { b"message" };
                    encode_frame(&mut frame, &[head, channel, message]);
                    for m in list {
                        m.deliver(&frame, limit, now_ms);
                    }
                    receivers += list.len();
                }
            }
            if shard {
                return receivers;
            }
            let patterns = self.patterns.read();
            for (pattern, list) in patterns.iter() {
                if !glob_match(pattern, channel, false) {
                    continue;
                }
                frame.clear();
                encode_frame(&mut frame, &[b"pmessage", pattern, channel, message]);
                for m in list {
                    m.deliver(&frame, limit, now_ms);
                }
                receivers += list.len();
            }
            receivers
        })
    }

    /// Active channels (not patterns) matching `pattern`, if given.
    pub fn names(&self, kind: Kind, pattern: Option<&[u8]>) -> Vec<Bytes> {
        self.map(kind)
            .read()
            .keys()
            .filter(|c| pattern.is_none_or(|p| glob_match(p, c, false)))
            .cloned()
            .collect()
    }

    pub fn subscribers(&self, kind: Kind, name: &[u8]) -> usize {
        self.map(kind).read().get(name).map_or(0, Vec::len)
    }

    /// Distinct names (PUBSUB NUMPAT counts unique patterns).
    pub fn count(&self, kind: Kind) -> usize {
        self.map(kind).read().len()
    }
}
