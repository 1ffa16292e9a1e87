//! Pub/Sub: the server-wide registry of subscriptions (`registry.rs`), each
//! subscriber's mailbox (`mailbox.rs`) and
//! keyspace notifications (`notify.rs`). This file holds a connection's own
//! subscriptions and the hooks the connection loop and dispatch call.

pub mod mailbox;
pub mod notify;
pub mod registry;

use crate::client::ClientInfo;
use crate::protocol::Out;
use bytes::{Bytes, BytesMut};
use hashbrown::HashSet;
pub use mailbox::Mailbox;
pub use registry::{Kind, Registry};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Subscription counts other connections read (CLIENT LIST sub=, psub=, ssub=).
#[derive(Default)]
pub struct SubCounts {
    pub channels: AtomicUsize,
    pub patterns: AtomicUsize,
    pub shard: AtomicUsize,
}

impl SubCounts {
    /// What the subscriptions hold besides the names (shared with the
    /// registry): the entry in the client's own set and the mailbox reference
    /// in the channel's or pattern's subscriber list. Redis counts such
    /// per-subscription overhead in a client's memory too.
    pub fn memory(&self) -> u64 {
        const PER_SUBSCRIPTION: usize =
            std::mem::size_of::<Bytes>() + std::mem::size_of::<Arc<Mailbox>>();
        let n = self.channels.load(Ordering::Relaxed)
            + self.patterns.load(Ordering::Relaxed)
            + self.shard.load(Ordering::Relaxed);
        (n * PER_SUBSCRIPTION) as u64
    }

    /// In the pubsub context: CLIENT LIST flag P and the pubsub client class.
    pub fn active(&self) -> bool {
        self.channels.load(Ordering::Relaxed) > 0
            || self.patterns.load(Ordering::Relaxed) > 0
            || self.shard.load(Ordering::Relaxed) > 0
    }
}

/// One connection's subscriptions; exists only while it has at least one.
pub struct Subscriptions {
    pub mailbox: Arc<Mailbox>,
    channels: HashSet<Bytes>,
    /// In subscription order, as Redis lists them when unsubscribing all.
    patterns: Vec<Bytes>,
    shard: HashSet<Bytes>,
}

impl Subscriptions {
    fn new(info: &Arc<ClientInfo>) -> Self {
        Subscriptions {
            mailbox: info.inbox().clone(),
            channels: HashSet::new(),
            patterns: Vec::new(),
            shard: HashSet::new(),
        }
    }

    fn total(&self) -> usize {
        self.channels.len() + self.patterns.len() + self.shard.len()
    }

    /// The count Redis puts in (un)subscribe replies: shard subscriptions for
    /// the shard commands, channels plus patterns for the others.
    fn count_for(&self, kind: Kind) -> usize {
        match kind {
            Kind::Shard => self.shard.len(),
            _ => self.channels.len() + self.patterns.len(),
        }
    }

    fn has(&self, kind: Kind, name: &[u8]) -> bool {
        match kind {
            Kind::Channel => self.channels.contains(name),
            Kind::Shard => self.shard.contains(name),
            Kind::Pattern => self.patterns.iter().any(|p| p[..] == *name),
        }
    }

    fn insert(&mut self, kind: Kind, name: Bytes) {
        match kind {
            Kind::Channel => {
                self.channels.insert(name);
            }
            Kind::Shard => {
                self.shard.insert(name);
            }
            Kind::Pattern => self.patterns.push(name),
        }
    }

    fn take(&mut self, kind: Kind, name: &[u8]) -> Option<Bytes> {
        match kind {
            Kind::Channel => self.channels.take(name),
            Kind::Shard => self.shard.take(name),
            Kind::Pattern => {
                let i = self.patterns.iter().position(|p| p[..] == *name)?;
                Some(self.patterns.remove(i))
            }
        }
    }

    fn all(&self, kind: Kind) -> Vec<Bytes> {
        match kind {
            Kind::Channel => self.channels.iter().cloned().collect(),
            Kind::Shard => self.shard.iter().cloned().collect(),
            Kind::Pattern => self.patterns.clone(),
        }
    }
}

fn publish_counts(info: &ClientInfo, subs: &Option<Box<Subscriptions>>) {
    let c = &info.subs;
    let (ch, pa, sh) = subs.as_ref().map_or((0, 0, 0), |s| {
        (s.channels.len(), s.patterns.len(), s.shard.len())
    });
    c.channels.store(ch, Ordering::Relaxed);
    c.patterns.store(pa, Ordering::Relaxed);
    c.shard.store(sh, Ordering::Relaxed);
}

/// Writes one (un)subscribe confirmation: an array in RESP2, a push in RESP3.
fn confirm(out: &mut Out, verb: &[u8], name: Option<&[u8]>, count: usize) {
    out.buf
        .extend_from_slice(if out.resp3() { b">3\r\n" } else { b"*3\r\n" });
    out.bulk(verb);
    match name {
        Some(n) => out.bulk(n),
        None => out.null(),
    }
    out.int(count as i64);
    out.pushed_to = out.buf.len();
}

/// Moves messages already delivered to this client ahead of what comes next in
/// `out`, so a confirmation never overtakes a message published before it.
pub fn flush_mailbox(info: &ClientInfo, out: &mut Out) {
    if let Some(inbox) = info.inbox_if_any() {
        // Now part of the batch's replies, which are bounded per batch.
        inbox.take_into(&mut out.buf, false);
        out.pushed_to = out.buf.len();
    }
}

fn verbs(kind: Kind) -> (&'static [u8], &'static [u8]) {
    match kind {
        Kind::Channel => (b"subscribe", b"unsubscribe"),
        Kind::Pattern => (b"psubscribe", b"punsubscribe"),
        Kind::Shard => (b"ssubscribe", b"sunsubscribe"),
    }
}

/// (P|S)SUBSCRIBE: one confirmation per name, subscribed or already so.
/// `subs` is the connection's own (`Client::pubsub`), `registry` the server's.
pub fn subscribe(
    registry: &Registry,
    info: &Arc<ClientInfo>,
    subs_of: &mut Option<Box<Subscriptions>>,
    out: &mut Out,
    kind: Kind,
    names: &[&[u8]],
) {
    flush_mailbox(info, out);
    let subs = subs_of.get_or_insert_with(|| Box::new(Subscriptions::new(info)));
    for &name in names {
        if !subs.has(kind, name) {
            let name = Bytes::copy_from_slice(name);
            registry.add(kind, &name, &subs.mailbox);
            subs.insert(kind, name);
        }
        confirm(out, verbs(kind).0, Some(name), subs.count_for(kind));
    }
    publish_counts(info, subs_of);
}

/// (P|S)UNSUBSCRIBE: the named ones, or all of `kind` when none is named (with
/// one confirmation carrying a null name if there were none).
pub fn unsubscribe(
    registry: &Registry,
    info: &ClientInfo,
    subs_of: &mut Option<Box<Subscriptions>>,
    out: &mut Out,
    kind: Kind,
    names: &[&[u8]],
) {
    flush_mailbox(info, out);
    let verb = verbs(kind).1;
    let Some(subs) = subs_of.as_mut() else {
        if names.is_empty() {
            confirm(out, verb, None, 0);
        }
        for &name in names {
            confirm(out, verb, Some(name), 0);
        }
        return;
    };
    let targets: Vec<Bytes> = if names.is_empty() {
        subs.all(kind)
    } else {
        names.iter().map(|n| Bytes::copy_from_slice(n)).collect()
    };
    if targets.is_empty() {
        confirm(out, verb, None, subs.count_for(kind));
    }
    for name in &targets {
        if subs.take(kind, name).is_some() {
            registry.remove(kind, name, &subs.mailbox);
        }
        confirm(out, verb, Some(name), subs.count_for(kind));
    }
    if subs.total() == 0 {
        *subs_of = None;
    }
    publish_counts(info, subs_of);
}

/// Leaves every subscription (RESET, disconnect) without replying.
pub fn unsubscribe_all(
    registry: &Registry,
    info: &ClientInfo,
    subs_of: &mut Option<Box<Subscriptions>>,
) {
    let Some(subs) = subs_of.take() else {
        return;
    };
    for kind in [Kind::Channel, Kind::Pattern, Kind::Shard] {
        for name in subs.all(kind) {
            registry.remove(kind, &name, &subs.mailbox);
        }
    }
    publish_counts(info, subs_of);
}

/// Ready when this connection may have messages to write; never without an
/// inbox (the one who makes it raises the kill signal: `ClientInfo::inbox`).
pub fn poll_messages(info: &ClientInfo, cx: &mut std::task::Context<'_>) -> std::task::Poll<()> {
    match info.inbox_if_any() {
        Some(inbox) => inbox.poll_ready(cx),
        None => std::task::Poll::Pending,
    }
}

/// Appends waiting messages to the reply buffer before a write; returns the
/// mailbox and byte count to report once written (`Mailbox::written`).
pub fn take_messages(info: &ClientInfo, buf: &mut BytesMut) -> Option<(Arc<Mailbox>, usize)> {
    let inbox = info.inbox_if_any()?;
    let n = inbox.take_into(buf, true);
    (n > 0).then(|| (inbox.clone(), n))
}
