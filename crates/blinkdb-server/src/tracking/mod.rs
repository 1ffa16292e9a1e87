//! Client-side caching (CLIENT TRACKING), with Redis 7.0's semantics.
//!
//! - Default mode: after a read-only command of a tracking client, its keys
//!   go to the tracking table (`table.rs`); when one of them changes, each
//!   client that read it gets one invalidation and the key leaves the table.
//! - BCAST mode: no table; a changed key matching a client's prefix is
//!   collected, and the collected keys go out as one message per prefix at
//!   the end of the batch of commands that changed them (Redis sends them
//!   before the event loop sleeps).
//!
//! Changes come from the engine's observer (`pubsub/notify.rs`), on any
//! connection thread, with the changed key's shard locked. Messages go to the
//! target client's inbox: a RESP3 `invalidate` push, or for a redirection to a
//! RESP2 client in Pub/Sub mode a message on `__redis__:invalidate`.
//!
//! Locks, always taken in this order and never the other way: a shard (held
//! by the caller), `prefixes`, `table`, `clients` (read), an inbox.

mod table;

use crate::client::ClientInfo;
use crate::config::limits::OutputLimits;
use hashbrown::HashMap;
use parking_lot::{Mutex, RwLock};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use table::Table;

const ON: u8 = 1;
const BCAST: u8 = 2;
const BROKEN_REDIRECT: u8 = 4;

/// What other connections read of a client's tracking (CLIENT LIST), and the
/// broken-redirection mark that senders set.
#[derive(Default)]
pub struct TrackingFlags {
    bits: AtomicU8,
    redirect: AtomicU64,
}

impl TrackingFlags {
    fn set(&self, bits: u8, redirect: u64) {
        self.redirect.store(redirect, Ordering::Relaxed);
        self.bits.store(bits, Ordering::Relaxed);
    }

    fn mark_broken(&self) {
        self.bits.fetch_or(BROKEN_REDIRECT, Ordering::Relaxed);
    }

    pub fn broken(&self) -> bool {
        self.bits.load(Ordering::Relaxed) & BROKEN_REDIRECT != 0
    }

    /// CLIENT LIST's flag letters: t (tracking), R (broken redirect), B (BCAST).
    pub fn letters(&self) -> String {
        let bits = self.bits.load(Ordering::Relaxed);
        let mut s = String::new();
        for (bit, c) in [(ON, 't'), (BROKEN_REDIRECT, 'R'), (BCAST, 'B')] {
            if bits & bit != 0 {
                s.push(c);
            }
        }
        s
    }

    /// CLIENT LIST's redir: the redirection while tracking (0: none), else -1.
    pub fn redirect_shown(&self) -> i64 {
        if self.bits.load(Ordering::Relaxed) & ON != 0 {
            self.redirect.load(Ordering::Relaxed) as i64
        } else {
            -1
        }
    }
}

/// One connection's tracking options, while CLIENT TRACKING is on.
#[derive(Default)]
pub struct ClientTracking {
    /// Client id the invalidations go to (0: this connection).
    pub redirect: u64,
    pub bcast: bool,
    pub optin: bool,
    pub optout: bool,
    pub noloop: bool,
    /// CLIENT CACHING YES (OPTIN) or NO (OPTOUT) given for the next command.
    pub caching: bool,
    /// BCAST prefixes, sorted as Redis lists them.
    pub prefixes: BTreeSet<Vec<u8>>,
}

impl ClientTracking {
    /// Whether the keys of the read-only command just run are remembered.
    pub fn remembers_reads(&self) -> bool {
        // OPTIN remembers only after CACHING YES, OPTOUT all but after CACHING NO.
        let asked = if self.optin {
            self.caching
        } else {
            !(self.optout && self.caching)
        };
        !self.bcast && asked
    }
}

/// A tracking client as senders of invalidations see it.
struct Tracker {
    info: Arc<ClientInfo>,
    /// The redirection target's id and connection.
    redirect: Option<(u64, Weak<ClientInfo>)>,
    bcast: bool,
    noloop: bool,
}

/// Keys changed since the last broadcast, for the BCAST clients of one prefix.
#[derive(Default)]
struct Prefix {
    clients: Vec<u64>,
    /// Each changed key with the client that changed it last (0: none), for
    /// NOLOOP; sorted, as Redis sends them.
    keys: BTreeMap<Box<[u8]>, u64>,
}

/// What an invalidation says.
enum Body<'a> {
    Key(&'a [u8]),
    /// An encoded RESP array of keys (BCAST).
    Keys(&'a [u8]),
    /// Every key (FLUSHALL, FLUSHDB): a null in the tracking client's protocol.
    All,
}

#[derive(Default)]
pub struct Tracking {
    clients: RwLock<HashMap<u64, Arc<Tracker>>>,
    count: AtomicUsize,
    table: Mutex<Table>,
    prefixes: Mutex<BTreeMap<Box<[u8]>, Prefix>>,
    /// Prefixes in `prefixes` (read without its lock on every change).
    prefix_count: AtomicUsize,
    /// A changed key waits in some prefix for the next broadcast.
    bcast_pending: AtomicBool,
    /// `tracking-table-max-keys` (0: no limit).
    max_keys: AtomicU64,
    limits: Mutex<OutputLimits>,
}

fn put_bulk(buf: &mut Vec<u8>, b: &[u8]) {
    buf.push(b'$');
    buf.extend_from_slice(itoa::Buffer::new().format(b.len()).as_bytes());
    buf.extend_from_slice(b"\r\n");
    buf.extend_from_slice(b);
    buf.extend_from_slice(b"\r\n");
}

/// The RESP array of `keys`, leaving out those last changed by `skip` (NOLOOP);
/// None when that leaves none.
fn encode_keys(keys: &BTreeMap<Box<[u8]>, u64>, skip: Option<u64>) -> Option<Vec<u8>> {
    let n = keys.values().filter(|&&by| Some(by) != skip).count();
    if n == 0 {
        return None;
    }
    let mut buf = Vec::with_capacity(16 + n * 16);
    buf.push(b'*');
    buf.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
    buf.extend_from_slice(b"\r\n");
    for (k, &by) in keys {
        if Some(by) != skip {
            put_bulk(&mut buf, k);
        }
    }
    Some(buf)
}

impl Tracking {
    pub fn set_limits(&self, limits: OutputLimits, max_keys: u64) {
        *self.limits.lock() = limits;
        self.max_keys.store(max_keys, Ordering::Relaxed);
    }

    /// Clients with tracking on (INFO tracking_clients).
    pub fn count(&self) -> usize {
        self.count.load(Ordering::Relaxed)
    }

    /// (tracked keys, their client ids summed, BCAST prefixes), for INFO.
    pub fn stats(&self) -> (usize, u64, usize) {
        let t = self.table.lock();
        (
            t.keys(),
            t.items(),
            self.prefix_count.load(Ordering::Relaxed),
        )
    }

    /// Turns tracking on for `info` (or changes its options), adding the BCAST
    /// prefixes in `new_prefixes` ("" for all keys when BCAST names none).
    pub fn enable(
        &self,
        info: &Arc<ClientInfo>,
        opts: &ClientTracking,
        redirect_to: Option<&Arc<ClientInfo>>,
        new_prefixes: &[Vec<u8>],
    ) {
        if opts.bcast {
            let mut prefixes = self.prefixes.lock();
            for p in new_prefixes {
                let entry = prefixes.entry(p[..].into()).or_default();
                if !entry.clients.contains(&info.id) {
                    entry.clients.push(info.id);
                }
            }
            self.prefix_count.store(prefixes.len(), Ordering::Relaxed);
        }
        let tracker = Arc::new(Tracker {
            info: info.clone(),
            redirect: redirect_to.map(|t| (t.id, Arc::downgrade(t))),
            bcast: opts.bcast,
            noloop: opts.noloop,
        });
        let bits = ON | if opts.bcast { BCAST } else { 0 };
        info.tracking.set(bits, opts.redirect);
        if self.clients.write().insert(info.id, tracker).is_none() {
            self.count.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Turns tracking off for client `id` (CLIENT TRACKING OFF, RESET, disconnect).
    /// Its ids stay in the table until their keys change, as in Redis.
    pub fn disable(&self, info: &ClientInfo, prefixes: &BTreeSet<Vec<u8>>) {
        if !prefixes.is_empty() {
            let mut table = self.prefixes.lock();
            for p in prefixes {
                if let Some(entry) = table.get_mut(&p[..]) {
                    entry.clients.retain(|&c| c != info.id);
                    if entry.clients.is_empty() {
                        table.remove(&p[..]);
                    }
                }
            }
            self.prefix_count.store(table.len(), Ordering::Relaxed);
        }
        info.tracking.set(0, 0);
        if self.clients.write().remove(&info.id).is_some()
            && self.count.fetch_sub(1, Ordering::Relaxed) == 1
        {
            // Nobody left to invalidate: what the table holds is dead weight.
            self.table.lock().clear();
        }
    }

    /// Client `id` may cache `keys` (read by its last command).
    pub fn remember<'a>(&self, id: u64, keys: impl Iterator<Item = &'a [u8]>) {
        let mut table = self.table.lock();
        for k in keys {
            table.remember(k, id);
        }
    }

    /// `key` changed, by client `by` (0: expiry, eviction).
    pub fn invalidate(&self, key: &[u8], by: u64) {
        if self.prefix_count.load(Ordering::Relaxed) > 0 {
            self.collect_for_broadcast(key, by);
        }
        let Some(ids) = self.table.lock().take(key) else {
            return;
        };
        self.send_each(&ids.to_vec(), key, by);
    }

    fn send_each(&self, ids: &[u64], key: &[u8], by: u64) {
        let clients = self.clients.read();
        for id in ids {
            let Some(t) = clients.get(id) else {
                continue; // gone or tracking off: removed lazily
            };
            // A client that switched to BCAST gets nothing for keys it read before.
            if t.bcast || (t.noloop && *id == by) {
                continue;
            }
            self.send(t, Body::Key(key));
        }
    }

    fn collect_for_broadcast(&self, key: &[u8], by: u64) {
        let mut prefixes = self.prefixes.lock();
        let mut any = false;
        for (prefix, p) in prefixes.iter_mut() {
            if key.starts_with(prefix) {
                p.keys.insert(key.into(), by);
                any = true;
            }
        }
        if any {
            self.bcast_pending.store(true, Ordering::Release);
        }
    }

    /// Sends the keys collected for BCAST clients since the last call: one
    /// message per prefix. Cheap when nothing waits.
    pub fn broadcast(&self) {
        if !self.bcast_pending.load(Ordering::Acquire)
            || !self.bcast_pending.swap(false, Ordering::AcqRel)
        {
            return;
        }
        let mut prefixes = self.prefixes.lock();
        let clients = self.clients.read();
        for p in prefixes.values_mut() {
            if p.keys.is_empty() {
                continue;
            }
            let all = encode_keys(&p.keys, None);
            for id in &p.clients {
                let Some(t) = clients.get(id) else {
                    continue;
                };
                if t.noloop {
                    if let Some(own) = encode_keys(&p.keys, Some(*id)) {
                        self.send(t, Body::Keys(&own));
                    }
                } else if let Some(all) = &all {
                    self.send(t, Body::Keys(all));
                }
            }
            p.keys.clear();
        }
    }

    /// Every key is gone (FLUSHALL, FLUSHDB): every tracking client gets a
    /// null invalidation and the table empties.
    pub fn flush(&self) {
        let targets: Vec<Arc<Tracker>> = self.clients.read().values().cloned().collect();
        for t in &targets {
            self.send(t, Body::All);
        }
        self.table.lock().clear();
    }

    /// Over `tracking-table-max-keys`, forgets random keys, invalidating them
    /// for their clients (they would otherwise miss later changes). Each call
    /// that ends still over the limit makes the next one try 100 keys more.
    pub fn limit_used_slots(&self) {
        let max = self.max_keys.load(Ordering::Relaxed) as usize;
        if max == 0 {
            return;
        }
        let mut evicted = Vec::new();
        {
            let mut table = self.table.lock();
            if table.keys() <= max {
                table.rounds_over = 0;
                return;
            }
            let mut effort = 100 * (table.rounds_over as usize + 1);
            while effort > 0 && table.keys() > max {
                effort -= 1;
                match table.take_random() {
                    Some(taken) => evicted.push(taken),
                    None => break,
                }
            }
            if table.keys() <= max {
                table.rounds_over = 0;
            } else {
                table.rounds_over += 1;
            }
        }
        for (key, ids) in evicted {
            self.send_each(&ids.to_vec(), &key, 0);
        }
    }

    /// Writes one invalidation for tracking client `t`, as Redis's
    /// sendTrackingMessage: to its redirection if it has one (or, if that
    /// client is gone, a `tracking-redir-broken` push to itself in RESP3),
    /// as a push to a RESP3 target, as a `__redis__:invalidate` message to a
    /// RESP2 redirection target in Pub/Sub mode, else not at all.
    fn send(&self, t: &Tracker, body: Body) {
        let now = blinkdb_engine::now_ms();
        let target_arc;
        let (target, redirected) = match &t.redirect {
            None => (&t.info, false),
            Some((id, weak)) => match weak.upgrade().filter(|c| !c.is_gone()) {
                Some(c) => {
                    target_arc = c;
                    (&target_arc, true)
                }
                None => {
                    t.info.tracking.mark_broken();
                    if t.info.proto.load(Ordering::Relaxed) == 3 {
                        let id = itoa::Buffer::new().format(*id).to_string();
                        let limit = self.limit_for(&t.info);
                        t.info.inbox_from_elsewhere().deliver_raw(
                            &[
                                b">2\r\n$21\r\ntracking-redir-broken\r\n:",
                                id.as_bytes(),
                                b"\r\n",
                            ],
                            &limit,
                            now,
                        );
                    }
                    return;
                }
            },
        };
        let head: &[u8] = if target.proto.load(Ordering::Relaxed) == 3 {
            b">2\r\n$10\r\ninvalidate\r\n"
        } else if redirected && target.subs.active() {
            b"*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n"
        } else {
            // RESP2 without redirection: nothing can carry it.
            return;
        };
        let mut key_head = Vec::new();
        let parts: [&[u8]; 3] = match body {
            Body::Key(key) => {
                key_head.extend_from_slice(b"*1\r\n$");
                key_head.extend_from_slice(itoa::Buffer::new().format(key.len()).as_bytes());
                key_head.extend_from_slice(b"\r\n");
                [&key_head, key, b"\r\n"]
            }
            Body::Keys(array) => [array, b"", b""],
            // Redis writes the null of the tracking client's protocol.
            Body::All if t.info.proto.load(Ordering::Relaxed) == 3 => [b"_\r\n", b"", b""],
            Body::All => [b"$-1\r\n", b"", b""],
        };
        let limit = self.limit_for(target);
        target.inbox_from_elsewhere().deliver_raw(
            &[head, parts[0], parts[1], parts[2]],
            &limit,
            now,
        );
    }

    /// The output limit of `c`'s class: pubsub while it has subscriptions.
    fn limit_for(&self, c: &ClientInfo) -> crate::config::limits::ClassLimit {
        let limits = self.limits.lock();
        if c.subs.active() {
            limits.pubsub
        } else {
            limits.normal
        }
    }
}
