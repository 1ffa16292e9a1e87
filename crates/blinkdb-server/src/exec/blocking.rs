//! Clients that wait before their reply: blocked on keys (BLPOP, BLMOVE,
//! BZPOPMIN, BLMPOP...) or on WAIT, as Redis's blocked.c keeps them.
//!
//! A registry maps each waited key to its clients in the order they blocked.
//! A blocking command that finds nothing registers while it still holds the
//! locks of its keys, so a write to them either came before (and it served
//! itself) or sees it waiting. A write that creates a waited key notes it
//! (`blinkdb_engine::ready_keys`); once the writer's command, transaction or script
//! ends, the writer's thread serves the waiting clients, first blocked first:
//! the blocked command runs there on the waiting client's behalf, its effect
//! is logged right after the write, and its reply is handed to the waiting
//! connection, which sends it once the log has it as the fsync policy asks.

use crate::client::{ClientInfo, FLAG_BLOCKED};
use crate::commands::Ctx;
use crate::exec::session::Client;
use crate::protocol::{Args, Out};
use crate::server::state::Shared;
use parking_lot::Mutex;
use smallvec::SmallVec;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use tokio::time::Instant;

/// Serves a waiting client from `key`, which became ready: writes the reply
/// (an error reply too) and returns true, or returns false and leaves the
/// client waiting when the key holds nothing it can take.
pub type ServeFn = fn(&mut Ctx, &Args, &[u8]) -> bool;

/// A cheap look, without locking the key for a write, at whether a write to
/// `key` of `db` can serve the waiting command `args` at all (XREADGROUP: the
/// stream moved past its group's last ID). False skips the serve attempt.
pub type ReadyFn = fn(&Shared, usize, &Args, &[u8]) -> bool;

/// What a client answers when its wait ends without being served.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum TimeoutReply {
    /// The blocking pops and reads: a null array.
    NullArray,
    /// WAIT: the replicas that acknowledged this replication offset.
    Acks(u64),
    /// WAITAOF: whether the local AOF fsync'd log position `lsn` (an error if
    /// `local` was asked and the AOF is off now), and the replicas that
    /// reported `offset` fsync'd.
    AofAcks { offset: u64, lsn: u64, local: bool },
}

impl TimeoutReply {
    /// WAIT and WAITAOF: registered with the replication feed too.
    fn waits_for_acks(self) -> bool {
        matches!(self, TimeoutReply::Acks(_) | TimeoutReply::AofAcks { .. })
    }
}

/// How a wait ended.
pub enum Outcome {
    /// A write served it: the reply, and the log position it must wait for.
    Served(Vec<u8>, u64),
    TimedOut,
    /// CLIENT UNBLOCK, with ERROR or not.
    Unblocked {
        error: bool,
    },
    /// Ended by a change of the server's role or of the cluster: the error
    /// it answers (-MOVED, -CLUSTERDOWN, -UNBLOCKED), and whether the
    /// connection closes after it (Redis's CLIENT_CLOSE_AFTER_REPLY).
    Failed {
        error: String,
        close: bool,
    },
}

enum State {
    Waiting,
    Done(Outcome),
}

/// The client a blocking command would block: taken before the command
/// locks its keys (it registers while holding them).
pub struct Who {
    info: Arc<ClientInfo>,
    db: usize,
    proto: u8,
    readonly: bool,
}

impl Who {
    pub fn of(client: &Client) -> Who {
        Who {
            info: client.info.clone(),
            db: client.db,
            proto: client.proto,
            readonly: client.cluster_readonly,
        }
    }
}

/// A command's arguments in one allocation: end to end, and where each ends.
struct Words {
    bytes: Box<[u8]>,
    ends: SmallVec<[usize; 6]>,
}

impl Words {
    fn of(args: &Args) -> Words {
        let mut bytes = Vec::with_capacity(args.iter().map(|a| a.len()).sum());
        let mut ends = SmallVec::with_capacity(args.len());
        for a in args {
            bytes.extend_from_slice(a);
            ends.push(bytes.len());
        }
        Words {
            bytes: bytes.into_boxed_slice(),
            ends,
        }
    }

    fn args(&self) -> Args<'_> {
        crate::protocol::request::split_at_ends(&self.bytes, &self.ends)
    }
}

/// One blocked client.
pub struct Waiter {
    seq: u64,
    info: Arc<ClientInfo>,
    db: usize,
    proto: u8,
    /// The client had sent READONLY (cluster replicas serve its reads).
    pub readonly: bool,
    keys: SmallVec<[Box<[u8]>; 1]>,
    /// The blocked command's arguments, run again by `serve`.
    args: Words,
    serve: Option<ServeFn>,
    pub timeout_reply: TimeoutReply,
    /// None: it waits until served or unblocked.
    pub deadline: Option<Instant>,
    state: Mutex<State>,
    /// Only the blocked connection waits on it (`crate::client::signal`).
    wake: crate::client::signal::Signal,
    /// Served also when its key is gone (XREADGROUP ends with an error).
    serves_gone_key: std::sync::atomic::AtomicBool,
    /// Checked before each attempt to serve it (`ReadyFn`).
    ready: std::sync::OnceLock<ReadyFn>,
    /// The blocking call's own time, ns (Redis's `c->duration`), which its
    /// unblocking counts again (`count_unblocked`).
    duration_ns: AtomicU64,
}

impl Waiter {
    /// The blocked client came over TLS (its redirection names the port for it).
    pub fn is_tls(&self) -> bool {
        self.info.is_tls()
    }

    /// Notes how long the call that blocked took (the dispatcher, once it returned).
    pub fn set_duration(&self, nanos: u64) {
        self.duration_ns.store(nanos, Ordering::Relaxed);
    }

    /// Marks a wait that a deleted key ends too (XREADGROUP): call it while
    /// the keys are still locked.
    pub fn serve_when_key_gone(&self, registry: &Registry) {
        if !self.serves_gone_key.swap(true, Ordering::Relaxed) {
            registry.gone_key_waiters.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Skips the attempts to serve it that `check` rules out (set while the
    /// keys are still locked, as `serve_when_key_gone`).
    pub fn check_ready_with(&self, check: ReadyFn) {
        let _ = self.ready.set(check);
    }

    /// Whether a write to `key` of `db` may serve it (`ReadyFn`).
    fn may_serve(&self, shared: &Shared, db: usize, key: &[u8]) -> bool {
        self.ready
            .get()
            .is_none_or(|check| check(shared, db, &self.args.args(), key))
    }

    /// The keys it waits on (none for WAIT).
    pub fn keys(&self) -> &[Box<[u8]>] {
        &self.keys
    }

    /// Whether the blocked command is a write (BLPOP) or a read (XREAD).
    pub fn is_write(&self) -> bool {
        let args = self.args.args();
        crate::commands::table::resolve(&args)
            .and_then(|r| r.ok())
            .is_some_and(|s| s.has(crate::commands::table::WRITE))
    }

    /// Resolves once the wait has ended (served or unblocked; a timeout is
    /// the waiting connection's own clock, `block_timer`).
    pub async fn woken(&self) {
        self.wake.notified().await
    }

    /// The order it blocked in (unique among waiters).
    pub fn seq(&self) -> u64 {
        self.seq
    }
}

impl crate::exec::block_timer::Expire for Waiter {
    /// The waiting connection wakes and ends the wait (`Registry::finish`),
    /// unless something served it meanwhile.
    fn deadline_passed(&self) {
        self.wake.notify_one();
    }
}

/// The clients waiting on one key, by the order they blocked in.
type Queue = BTreeMap<u64, Arc<Waiter>>;

#[derive(Default)]
struct Inner {
    /// Per database (grown on demand), the waited keys: looked up by `&[u8]`,
    /// so serving a push allocates no key to find its waiters.
    keys: Vec<HashMap<Box<[u8]>, Queue>>,
    clients: HashMap<u64, Arc<Waiter>>,
}

impl Inner {
    fn queue(&self, db: usize, key: &[u8]) -> Option<&Queue> {
        self.keys.get(db)?.get(key)
    }
}

/// Every blocked client, by key and by client id.
#[derive(Default)]
pub struct Registry {
    inner: Mutex<Inner>,
    seq: AtomicU64,
    /// INFO's `blocked_clients`.
    count: AtomicUsize,
    /// Those with a timeout: INFO's `clients_in_timeout_table`.
    timed: AtomicUsize,
    /// Waiters a deleted key serves (`Waiter::serve_when_key_gone`).
    gone_key_waiters: AtomicUsize,
}

/// A deadline `end_ms` (a wall-clock time in ms, 0: none) as a timer instant.
pub fn deadline(end_ms: u64) -> Option<Instant> {
    (end_ms > 0).then(|| {
        let left = end_ms.saturating_sub(blinkdb_engine::now_ms());
        Instant::now() + std::time::Duration::from_millis(left)
    })
}

/// A blocking command's timeout in seconds with decimals, as Redis parses it
/// (a long double, rounded up to ms): the deadline in ms, or 0 for none.
pub fn timeout_secs(arg: &[u8]) -> Result<u64, &'static str> {
    const NOT_FLOAT: &str = "ERR timeout is not a float or out of range";
    let text = std::str::from_utf8(arg).map_err(|_| NOT_FLOAT)?;
    // Redis's string-to-long-double: no spaces, no trailing junk, finite.
    if text.is_empty() || text.starts_with(|c: char| c.is_ascii_whitespace()) {
        return Err(NOT_FLOAT);
    }
    let secs: f64 = text.parse().map_err(|_| NOT_FLOAT)?;
    if secs.is_nan() {
        return Err(NOT_FLOAT);
    }
    let ms = (secs * 1000.0).ceil();
    // Redis converts to a long long, which an infinite or too large value
    // leaves at its minimum on x86: "negative" too.
    if ms < 0.0 || ms >= i64::MAX as f64 {
        return Err("ERR timeout is negative");
    }
    if ms == 0.0 {
        return Ok(0);
    }
    let ms = ms.min(i64::MAX as f64) as u64;
    ms.checked_add(blinkdb_engine::now_ms())
        .filter(|end| *end <= i64::MAX as u64)
        .ok_or("ERR timeout is out of range")
}

impl Registry {
    /// INFO's `blocked_clients`.
    pub fn blocked_clients(&self) -> usize {
        self.count.load(Ordering::Relaxed)
    }

    /// INFO's `clients_in_timeout_table`: blocked clients with a timeout.
    pub fn timed_clients(&self) -> usize {
        self.timed.load(Ordering::Relaxed)
    }

    /// Blocks the client of `ctx` on `keys` (in its database) with `args`, to
    /// be served by `serve`. Call it while holding the locks of `keys`.
    pub fn block_on_keys(
        &self,
        shared: &Shared,
        who: &Who,
        keys: &[&[u8]],
        args: &Args,
        serve: ServeFn,
        end_ms: u64,
    ) -> Arc<Waiter> {
        let waiter = self.waiter(who, keys, args, Some(serve), end_ms);
        shared.engine.blocked.fetch_add(1, Ordering::Relaxed);
        self.register(&waiter);
        waiter
    }

    /// Blocks the client on no key (WAIT, whose `args` its statistics
    /// name) until `end_ms` or CLIENT UNBLOCK.
    /// WAIT: blocks `client` until `wake_wait` or `end_ms`; it then answers
    /// how many replicas acknowledged `offset`.
    pub fn block_for_acks(
        &self,
        client: &Client,
        args: &Args,
        end_ms: u64,
        reply: TimeoutReply,
    ) -> Arc<Waiter> {
        let mut waiter = self.waiter(&Who::of(client), &[], args, None, end_ms);
        if let Some(w) = Arc::get_mut(&mut waiter) {
            w.timeout_reply = reply;
        }
        self.register(&waiter);
        waiter
    }

    /// Ends the WAIT of client `id` (enough replicas acknowledged): it
    /// answers as at its timeout.
    pub fn wake_wait(&self, shared: &Shared, id: u64) {
        let Some(w) = self.inner.lock().clients.get(&id).cloned() else {
            return;
        };
        let mut state = w.state.lock();
        if !matches!(*state, State::Waiting) {
            return;
        }
        *state = State::Done(Outcome::TimedOut);
        self.deregister(shared, &w);
        drop(state);
        w.wake.notify_one();
    }

    fn waiter(
        &self,
        who: &Who,
        keys: &[&[u8]],
        args: &Args,
        serve: Option<ServeFn>,
        end_ms: u64,
    ) -> Arc<Waiter> {
        // Blocking commands usually name a key or a few: a scan finds repeats
        // without building a set (a set for many: BLPOP may name 100k keys).
        let unique: SmallVec<[Box<[u8]>; 1]> = if keys.len() <= 8 {
            keys.iter()
                .enumerate()
                .filter(|(i, k)| !keys[..*i].contains(k))
                .map(|(_, k)| (*k).into())
                .collect()
        } else {
            let mut seen = std::collections::HashSet::with_capacity(keys.len());
            keys.iter()
                .filter(|k| seen.insert(**k))
                .map(|k| (*k).into())
                .collect()
        };
        Arc::new(Waiter {
            seq: self.seq.fetch_add(1, Ordering::Relaxed),
            info: who.info.clone(),
            db: who.db,
            proto: who.proto,
            readonly: who.readonly,
            keys: unique,
            args: Words::of(args),
            serve,
            timeout_reply: if serve.is_some() {
                TimeoutReply::NullArray
            } else {
                TimeoutReply::Acks(0)
            },
            deadline: deadline(end_ms),
            state: Mutex::new(State::Waiting),
            wake: crate::client::signal::Signal::new(),
            serves_gone_key: std::sync::atomic::AtomicBool::new(false),
            ready: std::sync::OnceLock::new(),
            duration_ns: AtomicU64::new(0),
        })
    }

    fn register(&self, w: &Arc<Waiter>) {
        let mut inner = self.inner.lock();
        if inner.keys.len() <= w.db {
            inner.keys.resize_with(w.db + 1, HashMap::new);
        }
        let db = &mut inner.keys[w.db];
        for key in &w.keys {
            match db.get_mut(&key[..]) {
                Some(queue) => queue.insert(w.seq, w.clone()),
                None => db.entry(key.clone()).or_default().insert(w.seq, w.clone()),
            };
        }
        inner.clients.insert(w.info.id, w.clone());
        drop(inner);
        self.count.fetch_add(1, Ordering::Relaxed);
        if w.deadline.is_some() {
            self.timed.fetch_add(1, Ordering::Relaxed);
        }
        w.info.set_flag(FLAG_BLOCKED, true);
    }

    /// Takes `w` out of the registry; call with its state lock held, after
    /// its state left `Waiting`.
    fn deregister(&self, shared: &Shared, w: &Waiter) {
        let mut inner = self.inner.lock();
        if let Some(db) = inner.keys.get_mut(w.db) {
            for key in &w.keys {
                if let Some(waiting) = db.get_mut(&key[..]) {
                    waiting.remove(&w.seq);
                    if waiting.is_empty() {
                        db.remove(&key[..]);
                    }
                }
            }
        }
        if inner
            .clients
            .get(&w.info.id)
            .is_some_and(|c| c.seq == w.seq)
        {
            inner.clients.remove(&w.info.id);
        }
        drop(inner);
        if w.serve.is_some() {
            shared.engine.blocked.fetch_sub(1, Ordering::Relaxed);
        }
        self.count.fetch_sub(1, Ordering::Relaxed);
        if w.deadline.is_some() {
            self.timed.fetch_sub(1, Ordering::Relaxed);
        }
        if w.serves_gone_key.load(Ordering::Relaxed) {
            self.gone_key_waiters.fetch_sub(1, Ordering::Relaxed);
        }
        w.info.set_flag(FLAG_BLOCKED, false);
    }

    /// The first client waiting on `key` of `db` that blocked after sequence
    /// `after` (None: the first of all): one at a time, so that serving a
    /// push copies no list of waiters (it usually serves one).
    fn next_waiting(&self, db: usize, key: &[u8], after: Option<u64>) -> Option<Arc<Waiter>> {
        let inner = self.inner.lock();
        let queue = inner.queue(db, key)?;
        let from = match after {
            Some(seq) => std::ops::Bound::Excluded(seq),
            None => std::ops::Bound::Unbounded,
        };
        queue
            .range((from, std::ops::Bound::Unbounded))
            .next()
            .map(|(_, w)| w.clone())
    }

    /// The keys of `db` some client waits on (SWAPDB wakes those that exist).
    pub fn waited_keys(&self, db: usize) -> Vec<Box<[u8]>> {
        let inner = self.inner.lock();
        inner
            .keys
            .get(db)
            .map_or_else(Vec::new, |keys| keys.keys().cloned().collect())
    }

    /// Runs `w`'s command for it from `key`; the log position of what it
    /// logged if that ended its wait (0: nothing logged), None if it waits on.
    fn try_serve(&self, shared: &Shared, w: &Arc<Waiter>, key: &[u8]) -> Option<u64> {
        let mut state = w.state.lock();
        let (State::Waiting, Some(serve)) = (&*state, w.serve) else {
            return None;
        };
        let mut client = Client::new(w.info.clone(), shared);
        client.db = w.db;
        client.proto = w.proto;
        client.deny_blocking = true;
        let mut out = Out::new(w.proto);
        let args = w.args.args();
        let timer = crate::exec::stats::Timer::start();
        let served = serve(
            &mut Ctx {
                shared,
                client: &mut client,
                out: &mut out,
            },
            &args,
            key,
        );
        let reply_nanos = timer.elapsed_nanos();
        client.flush_stats(shared, 0, true);
        if !served {
            return None;
        }
        let settings = client.settings(shared);
        let failed = out.errors > 0;
        count_unblocked(shared, settings, w, &args, &args, reply_nanos, failed);
        let lsn = client.pending_lsn;
        *state = State::Done(Outcome::Served(
            Vec::from(std::mem::take(&mut out.buf)),
            lsn,
        ));
        self.deregister(shared, w);
        drop(state);
        w.wake.notify_one();
        Some(lsn)
    }

    /// Ends `w`'s wait on its own connection (its deadline passed, or it was
    /// woken): how it ended.
    pub fn finish(&self, shared: &Shared, w: &Waiter) -> Outcome {
        let mut state = w.state.lock();
        match std::mem::replace(&mut *state, State::Done(Outcome::TimedOut)) {
            State::Waiting => {
                self.deregister(shared, w);
                Outcome::TimedOut
            }
            State::Done(outcome) => outcome,
        }
    }

    /// The waiting connection went away: nothing of it stays registered.
    pub fn cancel(&self, shared: &Shared, w: &Waiter) {
        let _ = self.finish(shared, w);
        if w.timeout_reply.waits_for_acks() {
            shared.replication.feed.end_wait(w.info.id);
        }
    }

    /// Ends, with the error `verdict` gives, the wait of every blocked
    /// client it gives one for (Redis's clusterRedirectBlockedClientIfNeeded
    /// and disconnectAllBlockedClients). Returns how many.
    pub fn fail_where(
        &self,
        shared: &Shared,
        verdict: impl Fn(&Waiter) -> Option<(String, bool)>,
    ) -> usize {
        let waiters: Vec<Arc<Waiter>> = self.inner.lock().clients.values().cloned().collect();
        let mut ended = 0;
        for w in waiters {
            // Judged before taking its state lock: `verdict` may take others.
            let Some((error, close)) = verdict(&w) else {
                continue;
            };
            let mut state = w.state.lock();
            if !matches!(*state, State::Waiting) {
                continue;
            }
            *state = State::Done(Outcome::Failed { error, close });
            self.deregister(shared, &w);
            drop(state);
            w.wake.notify_one();
            ended += 1;
        }
        ended
    }

    /// CLIENT UNBLOCK: ends the wait of client `id` if it is blocked.
    pub fn unblock(&self, shared: &Shared, id: u64, error: bool) -> bool {
        let Some(w) = self.inner.lock().clients.get(&id).cloned() else {
            return false;
        };
        let mut state = w.state.lock();
        if !matches!(*state, State::Waiting) {
            return false;
        }
        *state = State::Done(Outcome::Unblocked { error });
        self.deregister(shared, &w);
        drop(state);
        // Either way Redis counts the call failed, and logs it with no arguments
        // (unblockClient has already reset them).
        let args = w.args.args();
        count_unblocked(shared, &shared.settings(), &w, &args, &Args::new(), 0, true);
        w.wake.notify_one();
        true
    }
}

/// What Redis 7.0's updateStatsOnUnblock counts when a blocked command is
/// served or ended by CLIENT UNBLOCK (a timeout adds nothing): its call was
/// counted when it blocked, without a slow log entry or a latency sample;
/// now its usec and latency histogram take its own time again plus the
/// time serving it took (`reply_nanos`), a failed call if it `failed`, a slow
/// log entry of that total naming `logged` (its arguments, or none), and the
/// serving time as a `command-unblocking` latency event. `args` are the
/// blocked command's.
fn count_unblocked(
    shared: &Shared,
    settings: &crate::config::Settings,
    w: &Waiter,
    args: &Args,
    logged: &Args,
    reply_nanos: u64,
    failed: bool,
) {
    let Some(spec) = crate::commands::table::resolve(args).and_then(|r| r.ok()) else {
        return;
    };
    let nanos = w.duration_ns.load(Ordering::Relaxed) + reply_nanos;
    if let Some(i) = spec.index() {
        crate::exec::stats::record_unblocked(i, nanos, failed, settings.latency_tracking);
    }
    let micros = nanos / 1000;
    let (slower_than, max_len) = (settings.slowlog_log_slower_than, settings.slowlog_max_len);
    if slower_than >= 0
        && micros >= slower_than as u64
        && max_len > 0
        && !spec.has(crate::commands::table::SKIP_SLOWLOG)
    {
        shared
            .diagnostics
            .slowlog
            .push(&w.info, spec, logged, micros, max_len);
    }
    let threshold = settings.latency_monitor_threshold_ms;
    shared.diagnostics.latency.add_if_needed(
        "command-unblocking",
        reply_nanos / 1_000_000,
        threshold,
    );
}

/// Serves the clients waiting on the keys this thread's writes made ready,
/// key by key in the order they became ready and, for each, first blocked
/// first. Serving can make more keys ready
/// (BLMOVE pushes): it goes on until none is left. Returns the log position
/// of the last effect logged (0: none), which the writer's own reply waits
/// for too, so that the served connections usually find it written.
pub fn serve_ready(shared: &Shared) -> u64 {
    let mut logged = 0;
    loop {
        let ready = blinkdb_engine::ready_keys::take();
        if ready.is_empty() {
            return logged;
        }
        for (db, key) in ready {
            let (mut after, mut gone) = (None, false);
            while let Some(w) = shared.exec.blocking.next_waiting(db, &key, after) {
                after = Some(w.seq);
                // Once the key is gone (a list emptied), only waits that
                // a deleted key ends (XREADGROUP's error) are served.
                if gone && !w.serves_gone_key.load(Ordering::Relaxed) {
                    continue;
                }
                if !w.may_serve(shared, db, &key) {
                    continue;
                }
                if let Some(lsn) = shared.exec.blocking.try_serve(shared, &w, &key) {
                    logged = logged.max(lsn);
                }
                if !gone && !shared.engine.peek(db, &key, |e| e.is_some()) {
                    gone = true;
                }
                if gone
                    && shared
                        .exec
                        .blocking
                        .gone_key_waiters
                        .load(Ordering::Relaxed)
                        == 0
                {
                    break;
                }
            }
        }
    }
}

/// Notes as ready every key of `db` that clients wait on and that now holds
/// a type they block on (SWAPDB brought another database's keys in).
pub fn signal_existing(shared: &Shared, db: usize) {
    if shared.engine.blocked.load(Ordering::Relaxed) == 0 {
        return;
    }
    for key in shared.exec.blocking.waited_keys(db) {
        if shared
            .engine
            .peek(db, &key, |e| e.is_some_and(|e| e.value().wakes_blocked()))
        {
            blinkdb_engine::ready_keys::signal(db, &key);
        }
    }
}

/// The waited keys of `db` (every database when None) that hold streams:
/// a flush that drops them must end their XREADGROUP waits, as Redis's
/// scanDatabaseForDeletedStreams does.
pub fn waited_streams(shared: &Shared, db: Option<usize>) -> Vec<(usize, Box<[u8]>)> {
    if shared.engine.blocked.load(Ordering::Relaxed) == 0 {
        return Vec::new();
    }
    let dbs: Vec<usize> = match db {
        Some(d) => vec![d],
        None => (0..shared.engine.databases()).collect(),
    };
    let mut found = Vec::new();
    for d in dbs {
        for key in shared.exec.blocking.waited_keys(d) {
            let stream = shared.engine.peek(d, &key, |e| {
                e.is_some_and(|e| matches!(e.value(), blinkdb_engine::Value::Stream(..)))
            });
            if stream {
                found.push((d, key));
            }
        }
    }
    found
}

/// Notes `keys` as ready (served after the command, as any write's).
pub fn signal_all(keys: &[(usize, Box<[u8]>)]) {
    for (db, key) in keys {
        blinkdb_engine::ready_keys::signal(*db, key);
    }
}

/// Writes the reply of a wait that ended without being served.
pub fn reply_unserved(
    shared: &Shared,
    client: u64,
    out: &mut Out,
    reply: TimeoutReply,
    outcome: &Outcome,
) {
    if reply.waits_for_acks() {
        shared.replication.feed.end_wait(client);
    }
    match (outcome, reply) {
        (Outcome::Unblocked { error: true }, _) => {
            out.error("UNBLOCKED client unblocked via CLIENT UNBLOCK")
        }
        (Outcome::Failed { error, .. }, _) => out.error(error),
        (_, TimeoutReply::NullArray) => out.null_array(),
        (_, TimeoutReply::Acks(offset)) => {
            out.int(shared.replication.feed.lock().acked(offset) as i64)
        }
        (_, TimeoutReply::AofAcks { offset, lsn, local }) => {
            crate::replication::waitaof::reply(shared, out, offset, lsn, local)
        }
    }
}
